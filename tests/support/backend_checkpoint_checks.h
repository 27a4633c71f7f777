#pragma once
// Checkpoint round trips of a decode backend (emulated or CUDA): a backend saved mid-sequence and loaded into a fresh
// one must continue bit for bit. Include after catch.hpp.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "emulation/decode_api.h"

namespace replayssm::testing {

inline bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// T tokens of random inputs in the backend's head-token form (k normalised so GDN stays stable).
inline emu::TokenData random_tokens(const emu::Dims& d, int T, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), decay(0.85f, 0.999f), beta(0.1f, 0.9f);
  emu::TokenData t;
  t.B = d.B, t.T = T;
  const std::size_t bt = std::size_t(d.B) * T;
  for (std::size_t i = 0; i < bt * d.H; ++i) t.a.push_back(decay(rng)), t.beta.push_back(beta(rng));
  for (std::size_t i = 0; i < bt * d.H * d.V; ++i) t.v.push_back(u(rng)), t.skip.push_back(0.1f * u(rng));
  for (std::size_t i = 0; i < bt * d.G; ++i) {
    std::vector<float> k(std::size_t(d.K));
    float n = 0.0f;
    for (float& x : k) x = u(rng), n += x * x;
    for (float& x : k) t.k.push_back(x / std::sqrt(n));
    for (int c = 0; c < d.K; ++c) t.q.push_back(u(rng) / std::sqrt(float(d.K)));
  }
  return t;
}

// The next step of both backends on the same inputs: the same output bits.
inline void step_both(emu::DecodeBackend& a, emu::DecodeBackend& b, const emu::Dims& d, std::mt19937& rng) {
  const emu::TokenData t = random_tokens(d, 1, rng);
  std::vector<float> oa(d.heads() * d.V), ob(oa.size());
  a.step(t.view(), oa.data());
  b.step(t.view(), ob.data());
  REQUIRE(same_floats(oa, ob));
}

// Stores, materialised state, flushes and the next blob: the same bits.
inline void check_same_state(emu::DecodeBackend& a, emu::DecodeBackend& b, const emu::Dims& d) {
  std::vector<std::uint8_t> ca, sa, cb, sb;
  a.stored(ca, sa);
  b.stored(cb, sb);
  CHECK(ca == cb);
  CHECK(sa == sb);
  std::vector<float> Sa(d.state_elems()), Sb(Sa.size());
  a.state(Sa.data());
  b.state(Sb.data());
  CHECK(same_floats(Sa, Sb));
  CHECK(a.flushes() == b.flushes());
  std::vector<std::uint8_t> ba, bb;
  a.save(ba);
  b.save(bb);
  CHECK(ba == bb);
}

// `cut` steps, save, load into a fresh backend, 40 more steps on both; then a verify saved before its accept (a
// pending verify is state too), loaded into a third backend, both accept alike and step on. B must be 2.
inline void check_backend_resume(const std::function<std::unique_ptr<emu::DecodeBackend>()>& make, const emu::Dims& d,
                                 const emu::Mode& m, int cut) {
  INFO("saved after " << cut << " steps");
  std::mt19937 rng(1234);
  auto a = make();
  a->init(d, m, nullptr);
  std::vector<float> o(d.heads() * d.V);
  for (int s = 0; s < cut; ++s) a->step(random_tokens(d, 1, rng).view(), o.data());
  std::vector<std::uint8_t> blob;
  a->save(blob);
  auto b = make();
  b->init(d, m, nullptr);
  b->load(blob.data(), blob.size());
  check_same_state(*a, *b, d);
  for (int s = 0; s < 40; ++s) step_both(*a, *b, d, rng);
  check_same_state(*a, *b, d);

  const emu::TokenData t = random_tokens(d, 3, rng);
  std::vector<float> oa(3 * d.heads() * d.V), ob(oa.size());
  a->verify(t.view(), oa.data());
  blob.clear();
  a->save(blob);
  auto c = make();
  c->init(d, m, nullptr);
  c->load(blob.data(), blob.size());
  const int accepted[2] = {2, 3};
  a->accept(accepted);
  c->accept(accepted);
  b->verify(t.view(), ob.data());
  b->accept(accepted);
  CHECK(same_floats(oa, ob));
  for (int s = 0; s < 9; ++s) step_both(*a, *c, d, rng);
  check_same_state(*a, *c, d);
}

}  // namespace replayssm::testing
