// Umbrella header: the static-planning core and the graph planner.
#pragma once

#include "tensormem/graph.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/status.h"
#include "tensormem/types.h"
#include "tensormem/validator.h"
