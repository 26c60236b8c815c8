// Invariants of the default registry that OpRegistry::add asserts. Release builds compile the
// assertions out, so they are checked here too: the fuzz build (assertions on) found CenterCropPad
// registered without a reference, which stopped every assertion-enabled aotc at its first model.
#include <gtest/gtest.h>

#include "ir/op_registry.h"

namespace aotc {
namespace {

TEST(OpRegistry, EveryOpHasShapeInferenceAndAReference) {
  const std::vector<const OpDef*> all = default_registry().all();
  ASSERT_GT(all.size(), 100u);
  for (const OpDef* def : all) {
    EXPECT_TRUE(def->infer != nullptr) << def->domain << "." << def->op_type;
    EXPECT_TRUE(def->reference != nullptr) << def->domain << "." << def->op_type;
  }
}

}  // namespace
}  // namespace aotc
