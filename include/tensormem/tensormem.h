// SPDX-License-Identifier: Apache-2.0
// Umbrella header: the static-planning core, the graph planner and the
// readers (problems and allocation traces).
#pragma once

#include "tensormem/defaults.h"
#include "tensormem/graph.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/solver_tuning.h"
#include "tensormem/status.h"
#include "tensormem/trace.h"
#include "tensormem/types.h"
#include "tensormem/validator.h"
#include "tensormem/version.h"
