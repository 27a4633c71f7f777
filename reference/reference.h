#pragma once
// Umbrella include for the FP64 reference.
#include "reference/batch.h"
#include "reference/conventional_head.h"
#include "reference/gdn_chunked.h"
#include "reference/gdn_recurrent.h"
#include "reference/gdn_replay.h"
#include "reference/head_record.h"
#include "reference/layer_inputs.h"
#include "reference/mamba2_chunked.h"
#include "reference/mamba2_recurrent.h"
#include "reference/mamba2_replay.h"
#include "reference/preprocess.h"
#include "reference/replay_head.h"
