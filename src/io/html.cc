// SPDX-License-Identifier: Apache-2.0
// An interactive memory map: one self-contained HTML page (inline script and
// style, no network). The data goes in as flat number arrays; the script
// draws on a canvas (one fillRect per buffer, batched by colour), so 10^5
// buffers draw in tens of milliseconds, and finds the buffer under the
// pointer by a linear scan (about a millisecond for 10^5).
//
// The page writes its own summary into #summary (data-buffers, data-total,
// data-lower-bound, data-draw-ms: script start to first frame drawn,
// data-load-ms: navigation start to then) once it has drawn: a headless browser's
// --dump-dom shows that the script ran and what it saw. With the URL
// fragment #selftest it also hovers, zooms and pans through its own event
// handlers (synthetic events) and records the outcome in data-selftest.
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "io/text_util.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {


// A JavaScript string literal that is safe inside <script>.
std::string JsString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

template <typename Get>
void WriteArray(std::ostream& out, std::size_t n, Get&& get) {
  out << '[';
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out << ',';
    out << get(i);
  }
  out << ']';
}

constexpr std::string_view kHead = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
html,body{margin:0;height:100%;font:13px sans-serif;background:#fff;color:#222}
#top{padding:6px 10px;border-bottom:1px solid #ddd}
#title{font-size:15px;font-weight:bold}
#summary{margin-left:12px}
#hint{color:#777;margin-left:12px}
#map{display:block;width:100%;cursor:crosshair}
#tip{position:fixed;pointer-events:none;background:rgba(255,255,224,.95);border:1px solid #999;
padding:4px 6px;font:12px monospace;white-space:pre;display:none}
</style>
)HTML";

constexpr std::string_view kScript = R"JS(
(function(){
"use strict";
const T0=performance.now();
const N=F.length, cv=document.getElementById("map"), ctx=cv.getContext("2d");
const tip=document.getElementById("tip"), sum=document.getElementById("summary");
const ML=92, MR=16, MT=12, MB=34;
let X0=Infinity, X1=-Infinity;
for(let i=0;i<N;i++){ if(F[i]<X0)X0=F[i]; if(L[i]+1>X1)X1=L[i]+1; }
if(RN){ X0=Math.min(X0,0); X1=Math.max(X1,RN); }
if(!(X0<X1)){ X0=0; X1=1; }
let RMAX=0; for(let j=0;j<RV.length;j++) if(RV[j]>RMAX) RMAX=RV[j];
let YTOP=Math.max(TOTAL,LB,RMAX,1);
YTOP*=1.04;
let v={x0:X0,x1:X1,y0:0,y1:YTOP}, W=0, H=0, DPR=window.devicePixelRatio||1;
const HUES=24, buckets=[]; for(let c=0;c<HUES;c++) buckets.push([]);
for(let i=0;i<N;i++) if(S[i]>0) buckets[(i*7)%HUES].push(i);
const colors=[]; for(let c=0;c<HUES;c++) colors.push("hsl("+Math.round(c*360/HUES)+",62%,62%)");
function bytes(b){ const u=["B","KiB","MiB","GiB","TiB"]; let k=0; while(b>=1024&&k<4){b/=1024;k++;}
  return (k? b.toFixed(2):String(b))+" "+u[k]; }
function px(x){ return ML+(x-v.x0)/(v.x1-v.x0)*(W-ML-MR); }
function py(y){ return MT+(H-MT-MB)-(y-v.y0)/(v.y1-v.y0)*(H-MT-MB); }
function wx(p){ return v.x0+(p-ML)/(W-ML-MR)*(v.x1-v.x0); }
function wy(p){ return v.y0+(MT+(H-MT-MB)-p)/(H-MT-MB)*(v.y1-v.y0); }
function segs(i){ return G[i] || [[F[i],L[i],0,S[i]]]; }
function resize(){ W=window.innerWidth; H=Math.max(240,window.innerHeight-document.getElementById("top").offsetHeight-4);
  cv.width=W*DPR; cv.height=H*DPR; cv.style.height=H+"px"; ctx.setTransform(DPR,0,0,DPR,0,0); draw(); }
function hline(y,color,dash,label,left){ const p=py(y); if(p<MT||p>H-MB) return;
  ctx.strokeStyle=color; ctx.setLineDash(dash); ctx.lineWidth=1.5; ctx.beginPath(); ctx.moveTo(ML,p); ctx.lineTo(W-MR,p); ctx.stroke();
  ctx.setLineDash([]); ctx.fillStyle=color; ctx.fillText(label,left?ML+6:W-MR-ctx.measureText(label).width-4,p-4); }
let drawn=0;
function draw(){
  ctx.clearRect(0,0,W,H); ctx.save(); ctx.beginPath(); ctx.rect(ML,MT,W-ML-MR,H-MT-MB); ctx.clip();
  const sx=(W-ML-MR)/(v.x1-v.x0), sy=(H-MT-MB)/(v.y1-v.y0); drawn=0;
  for(let c=0;c<HUES;c++){ ctx.fillStyle=colors[c]; const b=buckets[c];
    for(let j=0;j<b.length;j++){ const i=b[j]; const ss=segs(i);
      for(let s=0;s<ss.length;s++){ const g=ss[s];
        const a=ML+(g[0]-v.x0)*sx, e=ML+(g[1]+1-v.x0)*sx; if(e<ML||a>W-MR) continue;
        const top=py(O[i]+g[3]), bot=py(O[i]+g[2]); if(bot<MT||top>H-MB) continue;
        ctx.fillRect(a,top,Math.max(1,e-a),Math.max(1,bot-top)); drawn++; } } }
  if(drawn<4000){ ctx.strokeStyle="rgba(0,0,0,.35)"; ctx.lineWidth=0.6;
    for(let i=0;i<N;i++){ if(!(S[i]>0)) continue; const ss=segs(i);
      for(let s=0;s<ss.length;s++){ const g=ss[s]; const a=px(g[0]), e=px(g[1]+1), top=py(O[i]+g[3]), bot=py(O[i]+g[2]);
        if(e-a>3&&bot-top>3) ctx.strokeRect(a,top,e-a,bot-top); } } }
  if(RN){ ctx.strokeStyle="#1f5fd0"; ctx.lineWidth=1.5; ctx.beginPath(); let started=false;
    // Steps: RV[j] from event RK[j] up to the next change.
    for(let j=0;j<RK.length;j++){ const xs=RK[j], xe=j+1<RK.length?RK[j+1]:RN; if(xe<v.x0||xs>v.x1) continue;
      const a=px(Math.max(xs,v.x0-1)), b=px(Math.min(xe,v.x1+1)), y=py(RV[j]);
      if(!started){ ctx.moveTo(a,y); started=true; } else ctx.lineTo(a,y); ctx.lineTo(b,y); }
    ctx.stroke(); }
  ctx.font="12px sans-serif";
  hline(TOTAL,"#000",[],(RLABEL?"top ":"total ")+bytes(TOTAL));
  if(LB>0) hline(LB,"#c0392b",[6,4],"lower bound "+bytes(LB),true);
  ctx.restore();
  ctx.strokeStyle="#444"; ctx.lineWidth=1; ctx.strokeRect(ML,MT,W-ML-MR,H-MT-MB); ctx.fillStyle="#222"; ctx.font="11px sans-serif";
  for(let k=0;k<=5;k++){ const y=v.y0+(v.y1-v.y0)*k/5, p=py(y); ctx.fillText(bytes(Math.round(y)),4,p+4);
    const x=v.x0+(v.x1-v.x0)*k/5, q=px(x), t=String(Math.round(x));
    ctx.fillText(t,Math.min(q-10,W-ctx.measureText(t).width-2),H-MB+14); }
  ctx.fillText(XLABEL,(W-ML)/2+ML-20,H-6);
}
// The buffer under the pointer; failing that, one within 2 px (buffers
// narrower than a pixel stay reachable).
function at(mx,my){ for(let tol=0;tol<=2;tol+=2){ const xa=wx(mx-tol), xb=wx(mx+tol), ya=wy(my+tol), yb=wy(my-tol);
  for(let i=N-1;i>=0;i--){ if(!(S[i]>0)||xb<F[i]||xa>=L[i]+1||yb<O[i]||ya>=O[i]+S[i]) continue;
    const ss=segs(i); for(let s=0;s<ss.length;s++){ const g=ss[s]; if(xb>=g[0]&&xa<g[1]+1&&yb>=O[i]+g[2]&&ya<O[i]+g[3]) return i; } } }
  return -1; }
function id(i){ return I? I[i] : IN? IP+IN[i] : String(i); }
let hovered=-1, drag=null;
function pos(e){ const r=cv.getBoundingClientRect(); return [e.clientX-r.left,e.clientY-r.top]; }
cv.addEventListener("mousemove",function(e){ const p=pos(e);
  if(drag){ const dx=(p[0]-drag[0])/(W-ML-MR)*(v.x1-v.x0), dy=(p[1]-drag[1])/(H-MT-MB)*(v.y1-v.y0);
    v.x0-=dx; v.x1-=dx; v.y0+=dy; v.y1+=dy; drag=p; tip.style.display="none"; draw(); return; }
  hovered=at(p[0],p[1]);
  if(hovered<0){ tip.style.display="none"; return; }
  const i=hovered;
  tip.textContent="id "+id(i)+"\nsize "+S[i]+" B ("+bytes(S[i])+")\n"+XLABEL+"s ["+F[i]+", "+L[i]+"]\noffset "+O[i]+(G[i]?"\n"+G[i].length+" segments (gaps)":"");
  tip.style.left=(e.clientX+14)+"px"; tip.style.top=(e.clientY+14)+"px"; tip.style.display="block"; });
cv.addEventListener("mousedown",function(e){ drag=pos(e); cv.style.cursor="grabbing"; });
window.addEventListener("mouseup",function(){ drag=null; cv.style.cursor="crosshair"; });
cv.addEventListener("mouseleave",function(){ tip.style.display="none"; });
cv.addEventListener("wheel",function(e){ e.preventDefault(); const p=pos(e), f=Math.exp(Math.max(-5,Math.min(5,e.deltaY*0.002)));
  const x=wx(p[0]), y=wy(p[1]);
  if(!e.altKey){ v.x0=x-(x-v.x0)*f; v.x1=x+(v.x1-x)*f; }
  if(!e.shiftKey){ v.y0=y-(y-v.y0)*f; v.y1=y+(v.y1-y)*f; }
  draw(); },{passive:false});
cv.addEventListener("dblclick",function(){ v={x0:X0,x1:X1,y0:0,y1:YTOP}; draw(); });
window.addEventListener("resize",resize);
resize();
const ms=performance.now()-T0;
sum.dataset.loadMs=performance.now().toFixed(1);
sum.dataset.buffers=String(N); sum.dataset.total=String(TOTAL); sum.dataset.lowerBound=String(LB); sum.dataset.drawMs=ms.toFixed(1);
sum.textContent=N+" buffers, total "+TOTAL+" B ("+bytes(TOTAL)+")"+(LB>0?", lower bound "+bytes(LB)+", ratio "+(TOTAL/LB).toFixed(3):"")+
  (RN?", peak reserved "+bytes(RMAX):"")+" \u2014 drawn in "+ms.toFixed(0)+" ms";
if(location.hash==="#selftest"){
  let out=[];
  let k=-1; for(let i=0;i<N;i++) if(S[i]>0&&(k<0||S[i]*(L[i]-F[i]+1)>S[k]*(L[k]-F[k]+1))) k=i;
  const r=cv.getBoundingClientRect();
  if(k>=0){ const g=segs(k)[0], cx=(px(g[0])+px(g[1]+1))/2, cy=(py(O[k]+g[2])+py(O[k]+g[3]))/2;
    cv.dispatchEvent(new MouseEvent("mousemove",{clientX:r.left+cx,clientY:r.top+cy,bubbles:true}));
    out.push(hovered>=0?"hover="+id(hovered):"hover=none");
    out.push(tip.style.display==="block"?"tip=shown":"tip=hidden"); }
  const w0=v.x1-v.x0;
  cv.dispatchEvent(new WheelEvent("wheel",{deltaY:-300,clientX:r.left+W/2,clientY:r.top+H/2,bubbles:true,cancelable:true}));
  out.push("zoom="+(w0/(v.x1-v.x0)).toFixed(2));
  const a0=v.x0, t1=performance.now();
  cv.dispatchEvent(new MouseEvent("mousedown",{clientX:r.left+W/2,clientY:r.top+H/2,bubbles:true}));
  cv.dispatchEvent(new MouseEvent("mousemove",{clientX:r.left+W/2-100,clientY:r.top+H/2,bubbles:true}));
  window.dispatchEvent(new MouseEvent("mouseup",{bubbles:true}));
  out.push("pan="+((v.x0-a0)/(v.x1-v.x0)*(W-ML-MR)).toFixed(0)+"px");
  out.push("redraw_ms="+(performance.now()-t1).toFixed(1));
  sum.dataset.selftest=out.join(" ");
}
})();
)JS";

// The page up to the data script: title, summary line, hint, canvas.
void WritePageTop(std::ostream& out, const std::string& title) {
  out << kHead << "<title>" << io::MarkupEscape(title) << "</title></head><body>\n"
      << "<div id=\"top\"><span id=\"title\">" << io::MarkupEscape(title)
      << "</span><span id=\"summary\">loading\u2026</span><span id=\"hint\">wheel: zoom (shift: "
         "x only, alt: y only) \u00b7 drag: pan \u00b7 double click: reset \u00b7 hover: buffer"
         "</span></div>\n<canvas id=\"map\"></canvas><div id=\"tip\"></div>\n<script>\n";
}

// The constants, then the buffers as arrays: first task, last task, size,
// offset.
void WriteBuffers(std::ostream& out, const Problem& problem, const OffsetsPlan& plan, const HtmlMapOptions& options) {
  const auto& b = problem.buffers;
  const std::size_t n = b.size();
  out << "const TOTAL=" << plan.total << ",LB=" << options.lower_bound
      << ",XLABEL=" << JsString(options.x_label)
      << ",RLABEL=" << (options.reserved.empty() ? "false" : "true")
      << ",RN=" << options.reserved.size() << ";\n";
  out << "const F=";
  WriteArray(out, n, [&](std::size_t i) { return b[i].first_task; });
  out << ";\nconst L=";
  WriteArray(out, n, [&](std::size_t i) { return b[i].last_task; });
  out << ";\nconst S=";
  WriteArray(out, n, [&](std::size_t i) { return b[i].size; });
  out << ";\nconst O=";
  WriteArray(out, n, [&](std::size_t i) { return plan.offsets[i]; });
}

// The reserved bytes as change points: (event, value) where the value changes.
void WriteReserved(std::ostream& out, const HtmlMapOptions& options) {
  std::vector<std::size_t> changes;
  for (std::size_t i = 0; i < options.reserved.size(); ++i)
    if (i == 0 || options.reserved[i] != options.reserved[i - 1]) changes.push_back(i);
  out << ";\nconst RK=";
  WriteArray(out, changes.size(), [&](std::size_t j) { return changes[j]; });
  out << ";\nconst RV=";
  WriteArray(out, changes.size(), [&](std::size_t j) { return options.reserved[changes[j]]; });
}

// How the ids are written: not at all when they are simply 0, 1, 2, ...;
// as numbers when they are "<prefix><number>" with one prefix (a trace's
// "line<N>"); else as strings.
struct IdForm {
  bool plain = true;
  bool numbered = false;
  std::string prefix;
};

IdForm IdFormOf(const std::vector<Buffer>& b) {
  IdForm form;
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n && form.plain; ++i) form.plain = b[i].id == std::to_string(i);
  form.numbered = !form.plain && n > 0;
  for (std::size_t i = 0; i < n && form.numbered; ++i) {
    const std::string& id = b[i].id;
    const std::size_t digits = id.find_last_not_of("0123456789") + 1;  // npos + 1 = 0
    if (i == 0) form.prefix = id.substr(0, digits);
    form.numbered = digits < id.size() && id.size() - digits <= 15 && id.compare(0, digits, form.prefix) == 0 &&
                    digits == form.prefix.size() && (id[digits] != '0' || digits + 1 == id.size());
  }
  return form;
}

void WriteIds(std::ostream& out, const std::vector<Buffer>& b) {
  const IdForm form = IdFormOf(b);
  out << ";\nconst I=";
  if (form.plain || form.numbered) {
    out << "null";
  } else {
    WriteArray(out, b.size(), [&](std::size_t i) { return JsString(b[i].id); });
  }
  out << ";\nconst IP=" << JsString(form.prefix) << ",IN=";
  if (form.numbered) {
    WriteArray(out, b.size(), [&](std::size_t i) { return std::string_view(b[i].id).substr(form.prefix.size()); });
  } else {
    out << "null";
  }
}

// Segments of the buffers with gaps: {index: [[first, last, lo, hi], ...]}.
void WriteGapSegments(std::ostream& out, const std::vector<Buffer>& b) {
  out << ";\nconst G={";
  bool first = true;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i].gaps.empty()) continue;
    out << (first ? "" : ",") << i << ":[";
    first = false;
    const std::vector<Segment> segments = Occupancy(b[i]);
    for (std::size_t s = 0; s < segments.size(); ++s)
      out << (s ? "," : "") << '[' << segments[s].first_task << ',' << segments[s].last_task << ','
          << segments[s].lo << ',' << segments[s].hi << ']';
    out << ']';
  }
  out << "};\n";
}

}  // namespace

Status WriteHtmlMap(std::ostream& out, const Problem& problem, const OffsetsPlan& plan,
                    const HtmlMapOptions& options) {
  const std::size_t n = problem.buffers.size();
  if (plan.offsets.size() != n)
    return InvalidArgument("plan has " + std::to_string(plan.offsets.size()) + " offsets for " +
                           std::to_string(n) + " buffers");
  WritePageTop(out, options.title.empty() ? "memory map" : options.title);
  WriteBuffers(out, problem, plan, options);
  WriteReserved(out, options);
  WriteIds(out, problem.buffers);
  WriteGapSegments(out, problem.buffers);
  out << kScript << "</script>\n</body></html>\n";
  if (!out) return Internal("writing the HTML map failed");
  return Status::Ok();
}

}  // namespace tensormem
