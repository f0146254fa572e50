// JobFacts moved to the report's contract model (engine/report/job_facts.h): every report carries
// them typed. This header stays only so that code written against the old path keeps building.
#pragma once

#include "engine/report/job_facts.h"
