#include "kernels/isa.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"

namespace augur::kernels {
namespace {

TEST(Isa, ScalarIsAlwaysSupported) {
  EXPECT_TRUE(cpu_supports(Isa::kScalar));
  EXPECT_EQ(supported_isas().front(), Isa::kScalar);
}

TEST(Isa, SupportedPathsAreTheKnownOnesThisCpuRunsInOrder) {
  std::vector<Isa> expected;
  for (Isa isa : all_isas()) {
    if (cpu_supports(isa)) expected.push_back(isa);
  }
  EXPECT_EQ(supported_isas(), expected);
  // AVX-512 includes AVX2: its path falls back to the AVX2 kernels.
  EXPECT_TRUE(!cpu_supports(Isa::kAvx512) || cpu_supports(Isa::kAvx2));
  // AMX includes AVX-512: its path falls back to the AVX-512 kernels.
  EXPECT_TRUE(!cpu_supports(Isa::kAmx) || cpu_supports(Isa::kAvx512));
  EXPECT_TRUE(runs_avx2_kernels(Isa::kAmx));
}

TEST(Isa, NoRequestPicksTheBestSupportedPath) {
  const Isa best = supported_isas().back();
  EXPECT_EQ(select_isa(nullptr), best);
  EXPECT_EQ(select_isa(""), best);
}

TEST(Isa, NamedRequestPicksThatPathOrNamesWhatIsAllowed) {
  for (Isa isa : all_isas()) {
    const std::string name(isa_name(isa));
    if (cpu_supports(isa)) {
      EXPECT_EQ(select_isa(name.c_str()), isa);
      continue;
    }
    try {
      (void)select_isa(name.c_str());
      FAIL() << "expected InvalidArgument for " << name;
    } catch (const InvalidArgument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("AUGUR_ISA=" + name), std::string::npos) << message;
      EXPECT_NE(message.find("does not support"), std::string::npos) << message;
    }
  }
}

TEST(Isa, UnknownRequestNamesTheValueAndWhatIsAllowed) {
  try {
    (void)select_isa("avx1024");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("avx1024"), std::string::npos) << message;
    for (Isa isa : supported_isas()) {
      EXPECT_NE(message.find(isa_name(isa)), std::string::npos) << message;
    }
  }
  EXPECT_THROW((void)select_isa("AVX2"), InvalidArgument);  // names are exact
  EXPECT_THROW((void)select_isa("avx512vnni"), InvalidArgument);
}

TEST(Isa, SetForTestingChangesActivePath) {
  for (Isa isa : all_isas()) {
    if (cpu_supports(isa)) {
      set_isa_for_testing(isa);
      EXPECT_EQ(active_isa(), isa_name(isa));
      EXPECT_EQ(current_isa(), isa);
    } else {
      EXPECT_THROW(set_isa_for_testing(isa), InvalidArgument) << isa_name(isa);
    }
  }
  set_isa_for_testing(select_isa(nullptr));
}

}  // namespace
}  // namespace augur::kernels
