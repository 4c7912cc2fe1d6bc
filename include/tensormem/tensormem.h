// Umbrella header: the static-planning core.
#pragma once

#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"
#include "tensormem/planning.h"
#include "tensormem/problem.h"
#include "tensormem/solver.h"
#include "tensormem/status.h"
#include "tensormem/types.h"
#include "tensormem/validator.h"
