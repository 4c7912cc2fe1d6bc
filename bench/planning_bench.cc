// Placeholder until the planning benchmarks land.
#include <benchmark/benchmark.h>
BENCHMARK_MAIN();
