#pragma once
// What the emulated decode backend (emulated_backend.cpp) carries from one call to the next: the stores, copies,
// records and counters, apart from scratch. A base of the backend, so the arithmetic reads these members directly
// while their checkpoint (save/load as a byte blob) lives in emulated_state.cpp, away from the arithmetic.
#include <cstdint>
#include <string>
#include <vector>

#include "emulation/decode_api.h"

namespace replayssm::emu {

struct EmulatedState {
  Dims d_;
  Mode m_;
  StoreLayout lay_;
  std::vector<std::uint8_t> codes_, scales_, snap_codes_, snap_scales_;
  std::vector<float> hp_, ra_, rbeta_, rk_, rw_, rv_;
  std::vector<float> ck_;  // replay: the decoded output checkpoint of every head
  std::vector<int> tree_;  // the pending tree verify's parents (empty: none, or a chain's)
  std::vector<int> n_, tok_;
  int pendingT_ = 0;
  long flushes_ = 0;

  bool ready() const { return !(codes_.empty() && lay_.code_bytes == 0); }  // init() ran
  // DecodeBackend::save / load of these members; backend: the owner's name(), written first and checked on load.
  // load() needs init() with the blob's Dims and Mode (every buffer's length is checked against init()'s); a blob
  // that fails leaves the state as it was.
  void save_state(std::vector<std::uint8_t>& out, const std::string& backend) const;
  void load_state(const std::uint8_t* blob, std::size_t size, const std::string& backend);
};

}  // namespace replayssm::emu
