#include "emulation/emulated_state.h"

#include <stdexcept>
#include <utility>

#include "core/blob.h"

namespace replayssm::emu {
namespace {

// Every buffer that carries state between calls (sized by init(), so a load checks each length).
template <class State, class Fn>
void state_fields(State& s, Fn&& fn) {
  fn(s.codes_, "codes"), fn(s.scales_, "scales"), fn(s.snap_codes_, "snapshot codes");
  fn(s.snap_scales_, "snapshot scales"), fn(s.hp_, "hp"), fn(s.ra_, "record a"), fn(s.rbeta_, "record beta");
  fn(s.rk_, "record k"), fn(s.rw_, "record w"), fn(s.rv_, "record v"), fn(s.ck_, "decoded checkpoint");
  fn(s.n_, "record counts"), fn(s.tok_, "token counters");
}

}  // namespace

void EmulatedState::save_state(std::vector<std::uint8_t>& out, const std::string& backend) const {
  if (!ready()) throw std::logic_error("save: init() first");
  BlobWriter w(out);
  w.str(backend);
  save_dims_mode(w, d_, m_);
  state_fields(*this, [&](const auto& v, const char*) { w.vec(v); });
  w.vec(tree_);
  w.pod(std::int64_t(pendingT_));
  w.pod(std::int64_t(flushes_));
}

void EmulatedState::load_state(const std::uint8_t* blob, std::size_t size, const std::string& backend) {
  if (!ready()) throw std::logic_error("load: init() with the blob's mode first");
  BlobReader r(blob, size, backend + " backend checkpoint");
  const std::string owner = r.str("backend");
  if (owner != backend) r.fail("backend", "a " + owner + " backend's blob");
  check_dims_mode(r, d_, m_);
  EmulatedState next = *this;
  state_fields(next, [&](auto& v, const char* field) { r.vec_into(v, field); });
  next.tree_ = r.vec<int>("pending tree");
  const auto pendingT = r.pod<std::int64_t>("pending verify"), flushes = r.pod<std::int64_t>("flushes");
  r.finish();
  if (pendingT < 0 || pendingT > m_.max_drafts) r.fail("pending verify", "out of range");
  for (int x : next.n_)
    if (x < 0 || x > m_.capacity()) r.fail("record counts", "out of range");
  next.pendingT_ = int(pendingT);
  next.flushes_ = long(flushes);
  *this = std::move(next);
}

}  // namespace replayssm::emu
