#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/activation_dump.h"
#include "core/compare.h"
#include "core/errors.h"
#include "core/h5.h"
#include "reference/gdn_recurrent.h"
#include "reference/mamba2_recurrent.h"
#include "runtime/backend.h"
#include "runtime/forward.h"
#include "runtime/model.h"

using namespace replayssm;

namespace {

std::string src_dir() {
  const char* s = std::getenv("REPLAYSSM_SOURCE_DIR");
  return s ? s : ".";
}
std::string model_path(const std::string& arch) { return src_dir() + "/datasets/models/tiny_" + arch + ".h5"; }
std::string book_path() { return src_dir() + "/datasets/pg19/test/10146.txt"; }
std::string tmp_path(const std::string& name) { return "/tmp/replayssm_rt_" + std::to_string(::getpid()) + "_" + name; }

struct Golden {
  std::vector<std::uint8_t> tokens;
  h5::Array<double> logprobs;
};
Golden load_golden(const std::string& arch) {
  const auto f = h5::File::open_read(src_dir() + "/datasets/models/tiny_" + arch + ".golden.h5");
  Golden g;
  g.tokens = f.read_u8("/tokens").data;
  g.logprobs = f.read_f64("/logprobs");
  return g;
}

// Runs a shell command; returns the exit status, stderr in *err.
int sh(const std::string& cmd, std::string* err) {
  const std::string ef = tmp_path("stderr.txt");
  const int rc = std::system((cmd + " 2>" + ef + " >/dev/null").c_str());
  std::ifstream in(ef);
  err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::remove(ef.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string cli() {
  const char* c = std::getenv("REPLAYSSM_CLI");
  return c ? c : "replayssm";
}

// A copy of a model with one tensor removed, or replaced by `data` of `shape`.
std::string broken_copy(const std::string& arch, const std::string& tensor, const h5::Shape* shape,
                        const std::vector<double>* data, const std::string& tag) {
  const std::string p = tmp_path(tag + ".h5");
  std::filesystem::copy_file(model_path(arch), p, std::filesystem::copy_options::overwrite_existing);
  {
    auto f = h5::File::open_rw(p);
    REQUIRE(H5Ldelete(f.id(), tensor.c_str(), H5P_DEFAULT) >= 0);
    if (shape) f.write(tensor, *shape, data->data());
  }
  return p;
}

}  // namespace

TEST_CASE("runtime: FP64 teacher forcing matches the PyTorch float64 golden log-probs", "[runtime][golden]") {
  for (const std::string arch : {"gdn", "mamba2"}) {
    const auto m = runtime::TinyModel::load(model_path(arch));
    const Golden g = load_golden(arch);
    REQUIRE(g.logprobs.shape == h5::Shape{g.tokens.size(), 256});
    for (int threads : {1, 2}) {
      runtime::ReferenceBackend backend(threads);
      runtime::ForwardOptions opt;
      opt.threads = threads;
      const auto res = runtime::teacher_force(m, g.tokens, backend, opt);
      REQUIRE(res.logprobs.rows() == Eigen::Index(g.tokens.size()));
      const Comparison c =
          compare(g.logprobs.data.data(), res.logprobs.data(), g.logprobs.data.size(), Tolerance{1e-9, 1e-9, 0.0});
      INFO(arch << " threads=" << threads << ": " << c.summary());
      CHECK(c.pass);
      // Relative error of each log-prob on its own (the 1e-9 relative bound, element-wise).
      double worst = 0.0;
      for (std::size_t i = 0; i < g.logprobs.data.size(); ++i)
        worst = std::max(worst, std::fabs(res.logprobs.data()[i] - g.logprobs.data[i]) /
                                    std::max(1e-300, std::fabs(g.logprobs.data[i])));
      INFO("max element-wise relative error " << worst);
      CHECK(worst <= 1e-9);
    }
  }
}

TEST_CASE("runtime: threads and sequence length do not change a bit", "[runtime]") {
  for (const std::string arch : {"gdn", "mamba2"}) {
    const auto m = runtime::TinyModel::load(model_path(arch));
    const Golden g = load_golden(arch);
    std::vector<std::uint8_t> toks(g.tokens.begin(), g.tokens.begin() + 96);
    std::vector<ref::LayerOutputs> one, many;
    runtime::ReferenceBackend b1(1), b3(3);
    runtime::teacher_force(
        m, toks, b1, {},
        [&](int, const ref::GdnInputs*, const ref::Mamba2Inputs*, const ref::LayerOutputs& o) { one.push_back(o); });
    runtime::teacher_force(
        m, toks, b3, {},
        [&](int, const ref::GdnInputs*, const ref::Mamba2Inputs*, const ref::LayerOutputs& o) { many.push_back(o); });
    REQUIRE(one.size() == many.size());
    for (std::size_t l = 0; l < one.size(); ++l) {
      CHECK(one[l].o == many[l].o);
      CHECK(one[l].final_state == many[l].final_state);
    }
    // Projection threads and sequence length do not change a bit either: a 300-token run with 2 threads starts with
    // exactly the log-probs of a 96-token run with 1 thread.
    runtime::ForwardOptions two;
    two.threads = 2;
    std::vector<std::uint8_t> longer(g.tokens.begin(), g.tokens.begin() + 300);
    const auto a = runtime::teacher_force(m, toks, b1);
    const auto b = runtime::teacher_force(m, longer, b3, two);
    CHECK(a.logprobs == b.logprobs.topRows(96));
  }
}

TEST_CASE("runtime: bad model files give one-line errors naming the tensor", "[runtime][badinput]") {
  struct Case {
    std::string arch, tensor, tag, expect;
    h5::Shape shape;  // empty: delete only
    double fill;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"gdn", "/layers/2/mixer/in_k", "missing", "missing dataset", {}, 0.0},
      {"gdn", "/layers/1/mixer/conv_v", "shape", "", {256, 3}, 0.5},
      {"mamba2", "/layers/3/mixer/in_B", "shape2", "", {128, 256}, 0.5},
      {"mamba2", "/lm_head", "nan", "non-finite", {256, 256}, nan},
  };
  for (const auto& c : cases) {
    std::vector<double> data(c.shape.empty() ? 0 : c.shape[0] * c.shape[1], c.fill);
    const std::string p =
        broken_copy(c.arch, c.tensor, c.shape.empty() ? nullptr : &c.shape, &data, c.arch + "_" + c.tag);
    try {
      runtime::TinyModel::load(p);
      FAIL("loaded a broken model: " << c.tag);
    } catch (const UserError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.code() == kExitBadInput);
      CHECK(msg.find(p) != std::string::npos);
      CHECK(msg.find(c.tensor) != std::string::npos);
      if (!c.expect.empty()) CHECK(msg.find(c.expect) != std::string::npos);
    }
    // The CLI: exit 2, one line naming the tensor.
    std::string err;
    const int rc = sh(
        cli() + " capture --model " + p + " --text " + book_path() + " --tokens 8 --out " + tmp_path("never.h5"), &err);
    INFO(err);
    CHECK(rc == 2);
    CHECK(err.find(c.tensor) != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK_FALSE(std::filesystem::exists(tmp_path("never.h5")));
    std::remove(p.c_str());
  }
  // Missing config attribute and unknown arch.
  const std::string p = tmp_path("cfg.h5");
  std::filesystem::copy_file(model_path("gdn"), p, std::filesystem::copy_options::overwrite_existing);
  {
    auto f = h5::File::open_rw(p);
    REQUIRE(H5Adelete_by_name(f.id(), "/config", "Hv", H5P_DEFAULT) >= 0);
  }
  CHECK_THROWS_WITH(runtime::TinyModel::load(p), Catch::Contains("/config/@Hv"));
  {
    auto f = h5::File::open_rw(p);
    f.set_attr("/config", "arch", "transformer");
  }
  CHECK_THROWS_WITH(runtime::TinyModel::load(p), Catch::Contains("unknown arch"));
  std::remove(p.c_str());
  CHECK_THROWS_AS(runtime::TinyModel::load(tmp_path("absent.h5")), UserError);
}

TEST_CASE("runtime: capture round trip", "[runtime][capture]") {
  for (const std::string arch : {"gdn", "mamba2"}) {
    const auto m = runtime::TinyModel::load(model_path(arch));
    const Golden g = load_golden(arch);
    const long long offset = 100, n = 300;
    std::vector<std::uint8_t> toks;
    {
      std::ifstream in(book_path(), std::ios::binary);
      std::vector<char> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      toks.assign(all.begin() + offset, all.begin() + offset + n);
    }
    std::vector<ref::GdnInputs> gin;
    std::vector<ref::Mamba2Inputs> min;
    std::vector<ref::LayerOutputs> outs;
    runtime::ReferenceBackend backend(1);
    runtime::teacher_force(m, toks, backend, {},
                           [&](int, const ref::GdnInputs* a, const ref::Mamba2Inputs* b, const ref::LayerOutputs& o) {
                             if (a) gin.push_back(*a);
                             if (b) min.push_back(*b);
                             outs.push_back(o);
                           });
    for (const bool f64 : {true, false}) {
      const std::string out = tmp_path(arch + (f64 ? "_f64.h5" : "_f32.h5"));
      std::string err;
      const int rc = sh(cli() + " capture --model " + model_path(arch) + " --text " + book_path() + " --offset " +
                            std::to_string(offset) + " --tokens " + std::to_string(n) + " --threads 2 --logprobs" +
                            (f64 ? " --float64" : "") + " --out " + out,
                        &err);
      INFO(err);
      REQUIRE(rc == 0);
      const ActivationDump d = read_activation_dump(out);
      CHECK(arch_name(d.arch) == arch);
      REQUIRE(d.layers.size() == std::size_t(m.cfg.n_layers));
      const auto f = h5::File::open_read(out);
      CHECK(f.read_u8("/tokens").data == toks);
      CHECK(f.attr_int("/meta", "n_tokens") == n);
      CHECK(f.attr_string("/meta", "arch") == arch);
      CHECK(f.attr_string("/meta", "text_id") == "test/10146");
      for (std::size_t l = 0; l < d.layers.size(); ++l) {
        const auto o = f.read_f64("/layers/" + std::to_string(l) + "/o");
        const auto tol = f64 ? kFp64FormTolerance : Tolerance{1e-5, 1e-5, 0.0};
        // Stored outputs are the runtime's FP64 outputs; recomputing them from the stored inputs agrees (exactly
        // up to the reference's own rounding for float64 inputs; to float32 rounding of the inputs otherwise).
        const ref::LayerOutputs re =
            arch == "gdn" ? ref::gdn_recurrent(d.layers[l].gdn) : ref::mamba2_recurrent(d.layers[l].mamba2);
        const Comparison c = compare(o.data, re.o, tol);
        INFO("layer " << l << (f64 ? " f64 " : " f32 ") << c.summary());
        CHECK(c.pass);
        if (f64) {
          CHECK(o.data == outs[l].o);
          if (arch == "gdn") {
            CHECK(d.layers[l].gdn.q == gin[l].q);
            CHECK(d.layers[l].gdn.v == gin[l].v);
            CHECK(d.layers[l].gdn.g == gin[l].g);
            CHECK(d.layers[l].gdn.beta == gin[l].beta);
            CHECK(d.layers[l].gdn.scale == gin[l].scale);
          } else {
            CHECK(d.layers[l].mamba2.x == min[l].x);
            CHECK(d.layers[l].mamba2.C == min[l].C);
            CHECK(d.layers[l].mamba2.dt == min[l].dt);
            CHECK(d.layers[l].mamba2.A == min[l].A);
            CHECK(d.layers[l].mamba2.D == min[l].D);
          }
        } else if (arch == "gdn") {
          CHECK(d.layers[l].gdn.k[17] == double(float(gin[l].k[17])));
        } else {
          CHECK(d.layers[l].mamba2.B[17] == double(float(min[l].B[17])));
        }
      }
      std::remove(out.c_str());
    }
    // Offset 0 capture log-probs are a prefix of the golden ones (the model is causal).
    const std::string out0 = tmp_path(arch + "_0.h5");
    std::string err;
    REQUIRE(sh(cli() + " capture --model " + model_path(arch) + " --text " + book_path() +
                   " --tokens 64 --logprobs --out " + out0,
               &err) == 0);
    const auto lp = h5::File::open_read(out0).read_f64("/logprobs");
    REQUIRE(lp.shape == h5::Shape{64, 256});
    const Comparison c = compare(g.logprobs.data.data(), lp.data.data(), lp.data.size(), Tolerance{1e-9, 1e-9, 0.0});
    INFO(c.summary());
    CHECK(c.pass);
    std::remove(out0.c_str());
  }
  // Bad text slices: exit 2 naming the file.
  std::string err;
  CHECK(sh(cli() + " capture --model " + model_path("gdn") + " --text " + book_path() +
               " --offset 253800 --tokens 100 --out " + tmp_path("x.h5"),
           &err) == 2);
  CHECK(err.find("10146.txt") != std::string::npos);
}
