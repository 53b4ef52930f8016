#include "examples/transformer/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "examples/transformer/train_state.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::examples {
namespace {

const ModelConfig kSmall{11, 8, 2, 1, 4, 3};  // vocab, hidden, heads, blocks, seq, seed
const std::vector<int32_t> kTokens = {1, 5, 2, 7, 3, 3, 9, 0};   // 2 sequences
const std::vector<int32_t> kTargets = {5, 2, 7, 4, 3, 9, 0, 10};

// Loss of the whole model (all layers on one rank), and optionally its backward.
double LossAndGrads(TransformerLayers& m, bool backward) {
  std::vector<float> h;
  double loss = 0;
  for (int l = 0; l < m.layers(); ++l) {
    EXPECT_TRUE(m.Forward(l, 0, 2, kTokens.data(), kTargets.data(), h, backward, nullptr, &loss).ok());
  }
  if (backward) {
    std::vector<float> dh;
    for (int l = m.layers() - 1; l >= 0; --l) EXPECT_TRUE(m.Backward(l, 0, 2, 1.0f, dh).ok());
  }
  return loss;
}

TEST(TransformerModel, GradientsMatchFiniteDifferences) {
  rt::RunOnThreads(1, [](rt::Communicator& tp) {
    auto reducer = rt::DeterministicReducer::Create(tp, {kSmall.heads, rt::ElementType::kFloat32});
    ASSERT_TRUE(reducer.ok());
    TransformerLayers m(kSmall, tp, *reducer);
    LossAndGrads(m, true);
    int checked = 0;
    for (ParamShard* p : m.Params(0, m.layers())) {
      const std::vector<float> grad = p->grad;
      for (size_t i = 0; i < p->value.size(); i += 1 + p->value.size() / 3) {
        const float keep = p->value[i], eps = 1e-2f;
        p->value[i] = keep + eps;
        const double up = LossAndGrads(m, false);
        p->value[i] = keep - eps;
        const double down = LossAndGrads(m, false);
        p->value[i] = keep;
        const double numeric = (up - down) / (2 * eps);
        EXPECT_NEAR(grad[i], numeric, 2e-2 + 5e-2 * std::abs(numeric)) << "tensor " << p->id << " element " << i;
        ++checked;
      }
    }
    EXPECT_GT(checked, 40);
  });
}

TEST(TransformerModel, TensorParallelGradientsHaveTheSameBits) {
  // Full gradients from tp=1, compared element by element with tp=2 shards.
  std::map<uint64_t, ParamShard> one;
  rt::RunOnThreads(1, [&](rt::Communicator& tp) {
    auto reducer = rt::DeterministicReducer::Create(tp, {kSmall.heads, rt::ElementType::kFloat32});
    TransformerLayers m(kSmall, tp, *reducer);
    LossAndGrads(m, true);
    for (ParamShard* p : m.Params(0, m.layers())) one[p->id] = *p;
  });
  int compared = 0;
  rt::RunOnThreads(2, [&](rt::Communicator& tp) {
    auto reducer = rt::DeterministicReducer::Create(tp, {kSmall.heads, rt::ElementType::kFloat32});
    TransformerLayers m(kSmall, tp, *reducer);
    LossAndGrads(m, true);
    for (ParamShard* p : m.Params(0, m.layers())) {
      const ParamShard& full = one.at(p->id);
      for (size_t r = 0; r < p->row_count; ++r) {
        for (size_t c = 0; c < p->col_count; ++c) {
          const float mine = p->grad[r * p->col_count + c];
          const float ref = full.grad[(p->row_first + r) * full.col_count + p->col_first + c];
          ASSERT_EQ(std::memcmp(&mine, &ref, sizeof mine), 0) << "tensor " << p->id << " (" << r << "," << c << ")";
        }
      }
      if (tp.rank() == 1) ++compared;
    }
  });
  EXPECT_EQ(compared, 2 + 8 + 4 + 1);
}

// What a rank saves for a restart comes back bit for bit, and state that
// does not fit the model's shards is refused.
TEST(TrainState, RoundTripsParametersMomentsAndTheLossLog) {
  ParamShard a, b;
  a.id = 3;
  a.value = {1.5f, -0.0f, 3e-38f};
  b.id = 9;
  b.value = {7.0f};
  std::map<uint64_t, AdamState> adam;
  adam[3] = {{0.1f, 0.2f, 0.3f}, {1.0f, 2.0f, 3.0f}};  // b has no moments yet (SGD, or before step 1)
  const std::string bytes = SaveTrainState({&a, &b}, adam, "step 0 loss 5.5 0x1.6p+2\n");

  ParamShard a2, b2;
  a2.id = 3;
  a2.value.assign(3, 0.0f);
  b2.id = 9;
  b2.value.assign(1, 0.0f);
  std::map<uint64_t, AdamState> adam2;
  std::string log;
  ASSERT_TRUE(RestoreTrainState(bytes, {&a2, &b2}, adam2, log).ok());
  EXPECT_EQ(std::memcmp(a2.value.data(), a.value.data(), 3 * sizeof(float)), 0);
  EXPECT_EQ(b2.value, b.value);
  EXPECT_EQ(adam2[3].v, adam[3].v);
  EXPECT_TRUE(adam2[9].m.empty());
  EXPECT_EQ(log, "step 0 loss 5.5 0x1.6p+2\n");

  ParamShard wrong;
  wrong.id = 3;
  wrong.value.assign(4, 0.0f);  // another model's shard
  const Status s = RestoreTrainState(bytes, {&wrong}, adam2, log);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("parameter 3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace gpulaunch::examples
