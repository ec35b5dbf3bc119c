#include "kernels/isa.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace augur::kernels {
namespace {

TEST(Isa, ScalarIsAlwaysSupported) {
  EXPECT_TRUE(cpu_supports(Isa::kScalar));
  EXPECT_EQ(supported_isas().front(), Isa::kScalar);
}

TEST(Isa, NoRequestPicksTheBestSupportedPath) {
  const Isa best = cpu_supports(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  EXPECT_EQ(select_isa(nullptr), best);
  EXPECT_EQ(select_isa(""), best);
}

TEST(Isa, NamedRequestPicksThatPath) {
  EXPECT_EQ(select_isa("scalar"), Isa::kScalar);
  if (cpu_supports(Isa::kAvx2)) {
    EXPECT_EQ(select_isa("avx2"), Isa::kAvx2);
  }
}

TEST(Isa, UnknownRequestNamesTheValueAndWhatIsAllowed) {
  try {
    (void)select_isa("avx512");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("avx512"), std::string::npos) << message;
    EXPECT_NE(message.find("scalar"), std::string::npos) << message;
    if (cpu_supports(Isa::kAvx2)) {
      EXPECT_NE(message.find("avx2"), std::string::npos) << message;
    }
  }
  EXPECT_THROW((void)select_isa("AVX2"), InvalidArgument);  // names are exact
}

TEST(Isa, SetForTestingChangesActivePath) {
  set_isa_for_testing(Isa::kScalar);
  EXPECT_EQ(active_isa(), "scalar");
  if (cpu_supports(Isa::kAvx2)) {
    set_isa_for_testing(Isa::kAvx2);
    EXPECT_EQ(active_isa(), "avx2");
    EXPECT_EQ(current_isa(), Isa::kAvx2);
  } else {
    EXPECT_THROW(set_isa_for_testing(Isa::kAvx2), InvalidArgument);
  }
  set_isa_for_testing(select_isa(nullptr));
}

}  // namespace
}  // namespace augur::kernels
