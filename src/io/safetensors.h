#pragma once
// One include for code that reads checkpoints: dtypes, tensor views and the
// Checkpoint directory reader.
#include "io/checkpoint.h"
#include "io/dtype.h"
#include "io/tensor_view.h"
