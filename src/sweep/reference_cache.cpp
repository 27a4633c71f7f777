#include "sweep/reference_cache.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/errors.h"
#include "core/fnv1a.h"
#include "core/version.h"

namespace replayssm::sweep {
namespace {

constexpr const char* kKind = "replayssm FP64 reference cache";

std::string file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot read the model file");
  Fnv1a h;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.add(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  return h.hex();
}

// The key a file says it has, field by field against the one wanted: the first difference is the error.
void check_file(const h5::File& f, const ReferenceKey& key) {
  if (!f.has_attr("/", "kind") || f.attr_string("/", "kind") != kKind)
    f.fail("/@kind", std::string("expected '") + kKind + "' (not a reference cache file)");
  for (const auto& [field, want] : {std::pair<const char*, std::string>{"model_hash", key.model_hash},
                                    {"text_hash", key.text_hash}, {"tool_version", key.tool_version}}) {
    const std::string got = f.attr_string("/", field);
    if (got != want) f.fail(std::string("/@") + field, "expected " + want + ", got " + got + " (a reference of other inputs)");
  }
  const std::int64_t tokens = f.attr_int("/", "tokens");
  if (tokens != key.tokens)
    f.fail("/@tokens", "expected " + std::to_string(key.tokens) + ", got " + std::to_string(tokens));
  const auto T = static_cast<std::size_t>(key.tokens);
  h5::require_shape(f, "/logprobs", f.shape("/logprobs"), {T, 256});
  h5::require_shape(f, "/nll", f.shape("/nll"), {T});
}

}  // namespace

std::string ReferenceKey::file_name(const std::string& model_name) const {
  Fnv1a h;
  h.add(model_hash + "\n" + text_hash + "\n" + tool_version + "\n" + std::to_string(tokens) + "\n");
  return "reference-" + model_name + "-" + h.hex() + ".h5";
}

ReferenceKey reference_key(const std::string& model_path, const TextSlice& text) {
  ReferenceKey k;
  k.model_hash = file_hash(model_path);
  Fnv1a t;
  t.add(text.bytes.data(), text.bytes.size());
  k.text_hash = t.hex();
  k.tool_version = tool_version();
  k.tokens = text.tokens;
  return k;
}

ReferenceFile ensure_reference(const ModelEvaluator& model, const TextSlice& text, const std::string& dir, int chunk,
                               int threads, const Provenance& provenance) {
  const ReferenceKey key = reference_key(model.path(), text);
  ReferenceFile out;
  out.path = (std::filesystem::path(dir) / key.file_name(model.name())).string();
  out.summary.model = model.name();
  if (std::filesystem::exists(out.path)) {
    const auto f = h5::File::open_read(out.path);
    check_file(f, key);
    out.summary.nll = f.read_f64("/nll").data;
    out.reused = true;
    return out;
  }
  const auto t_start = std::chrono::steady_clock::now();
  const std::size_t T = static_cast<std::size_t>(text.tokens);
  h5::AtomicOutput file(out.path);
  h5::File& f = file.file();
  f.set_attr("/", "kind", kKind);
  f.set_attr("/", "model_hash", key.model_hash);
  f.set_attr("/", "text_hash", key.text_hash);
  f.set_attr("/", "tool_version", key.tool_version);
  f.set_attr("/", "tokens", key.tokens);
  f.set_attr("/", "model", model.name());
  f.set_attr("/", "text", text.id);
  f.set_attr("/", "backend", "FP64 Eigen reference");
  h5::RowWriter logprobs(f, "/logprobs", {T, 256}, static_cast<std::size_t>(std::min(chunk, 1024)));
  f.set_attr("/logprobs", "meaning", "row t: natural-log probabilities of the byte after position t");
  out.summary.nll.resize(T);
  const auto stream = model.reference_stream(threads);
  for (std::size_t t0 = 0; t0 < T; t0 += static_cast<std::size_t>(chunk)) {
    const std::size_t n = std::min(T - t0, static_cast<std::size_t>(chunk));
    const std::vector<double> lp = stream->next(text.bytes.data() + t0, n);
    logprobs.append(lp.data(), n);
    for (std::size_t i = 0; i < n; ++i) out.summary.nll[t0 + i] = -lp[i * 256 + text.bytes[t0 + i + 1]];
  }
  f.write("/nll", {T}, out.summary.nll.data());
  f.set_attr("/nll", "meaning", "-log p(byte t + 1) of the reference, nats");
  const runtime::Fp64Device* dev = model.fp64_device();
  f.set_attr("/", "fp64_device", dev ? dev->name() : std::string("cpu"));  // the same bits on either
  h5::write_provenance(f, provenance.command, provenance.options, dev ? dev->name() : std::string("cpu"));
  file.commit();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return out;
}

ReferenceRows reference_rows(const std::string& path) {
  auto f = std::make_shared<h5::File>(h5::File::open_read(path));
  return [f](std::int64_t first, std::size_t n) {
    return h5::read_rows(*f, "/logprobs", static_cast<std::size_t>(first), n);
  };
}

}  // namespace replayssm::sweep
