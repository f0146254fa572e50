#include "engine/pipeline/parallel_diagnoses.h"

#include <gtest/gtest.h>

namespace diagnose {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(ParallelDiagnoses, HalfTheAvailableMemoryOverOneDiagnosisCapsTheCores) {
  // 16 GiB available, 400 MiB each: 8 GiB of budget holds 20, the cores allow 8.
  EXPECT_EQ(BoundParallelDiagnoses(8, 16 * kGiB, 400 * kMiB).parallel, 8);
  // 2 GiB available: a 1 GiB budget holds 2 of them on 8 cores.
  EXPECT_EQ(BoundParallelDiagnoses(8, 2 * kGiB, 400 * kMiB).parallel, 2);
  // Less than one diagnosis fits in the budget: still one at a time, never zero.
  EXPECT_EQ(BoundParallelDiagnoses(8, 300 * kMiB, 400 * kMiB).parallel, 1);
  // Unknown memory: the cores alone.
  EXPECT_EQ(BoundParallelDiagnoses(2, std::nullopt, 400 * kMiB).parallel, 2);
  EXPECT_EQ(BoundParallelDiagnoses(0, std::nullopt, 400 * kMiB).parallel, 1);
  const ParallelismBound b = BoundParallelDiagnoses(8, 2 * kGiB, 400 * kMiB);
  EXPECT_EQ(b.reason, "8 core(s), 2.0 GiB available, 400 MiB per diagnosis: 2 at a time");
}

TEST(ParallelDiagnoses, MemAvailableIsReadInKibibytesAndAnythingElseIsUnknown) {
  EXPECT_EQ(MemAvailableBytes("MemTotal:       16314328 kB\nMemFree:  1 kB\nMemAvailable:    8157164 kB\n"),
            int64_t{8157164} * 1024);
  EXPECT_EQ(MemAvailableBytes("MemTotal:       16314328 kB\n"), std::nullopt);
  EXPECT_EQ(MemAvailableBytes("MemAvailable: lots kB\n"), std::nullopt);
  EXPECT_EQ(MemAvailableBytes("MemAvailable: 12 MB\n"), std::nullopt);
  EXPECT_EQ(MemAvailableBytes("MemAvailable: 99999999999999999999 kB\n"), std::nullopt);
  EXPECT_EQ(MemAvailableBytes(""), std::nullopt);
}

TEST(ParallelDiagnoses, TheDefaultIsAtLeastOneAndSaysWhy) {
  const ParallelismBound b = DefaultParallelDiagnoses();
  EXPECT_GE(b.parallel, 1);
  EXPECT_LE(b.parallel, b.cores);
  EXPECT_NE(b.reason.find("at a time"), std::string::npos);
}

}  // namespace
}  // namespace diagnose
