// The mode-aware FP64 reference run side by side with a backend (run_mode_aware), its store reconciliation (flips
// taken over, illegal codes counted) and the pass criterion check_vs_mode_aware (validation.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "emulation/mode_aware_backend.h"
#include "emulation/tolerances.h"
#include "emulation/validation.h"
#include "emulation/validation_detail.h"
#include "formats/state_codec.h"

namespace replayssm::emu {

using detail::accepted_of;
using detail::base_row;
using detail::case_memory;
using detail::zero_guard;

// ================================ the mode-aware FP64 reference ================================
namespace {

using detail::ModeAwareReference;

// The backend's stored copy against the reference's after init (op -1) and after every op (StoreTolerance).
class StoreReconciler {
 public:
  StoreReconciler(ModeAwareReference& ref, const Mode& m, const Dims& d, const StoreTolerance& tol, StoreCheck& out)
      : ref_(ref), m_(m), d_(d), tol_(tol), out_(out), lay_(store_layout(m, d.V, d.K)), seen_(d.heads(), 0),
        stateful_(formats::is_stateful(m.format)) {}

  void check(DecodeBackend& be, long op) {
    const std::size_t nh = d_.heads(), VK = std::size_t(d_.V) * std::size_t(d_.K);
    long new_stores = 0;
    for (std::size_t hh = 0; hh < nh; ++hh) {
      const long s = ref_.head(hh).stores() + 1;  // + the initial store
      new_stores += s - seen_[hh];
      seen_[hh] = s;
    }
    const long elements = new_stores * long(VK);
    out_.stores += new_stores;
    out_.elements += elements;
    be.stored(codes_, scales_);
    if (codes_.size() != nh * lay_.code_bytes || scales_.size() != nh * lay_.scale_bytes) {
      ++out_.layout_mismatches;
      if (out_.first_illegal_op < -1) out_.first_illegal_op = op;
      return;
    }
    long flips = 0, illegal = 0;
    y_.resize(VK);
    for (std::size_t hh = 0; hh < nh; ++hh) {
      decode_head(m_, codes_.data() + hh * lay_.code_bytes, scales_.data() + hh * lay_.scale_bytes, d_.V, d_.K,
                  y_.data());
      ref::ModeAwareHead& head = ref_.head(hh);
      const Eigen::MatrixXd& yr = head.stored();
      const double M = yr.cwiseAbs().maxCoeff();
      bool took = false;  // any element of this head taken over from the backend
      for (int r = 0; r < d_.V; ++r)
        for (int c = 0; c < d_.K; ++c) {
          const double ye = double(y_[std::size_t(r) * std::size_t(d_.K) + std::size_t(c)]), yv = yr(r, c);
          if (!std::isfinite(ye) || !std::isfinite(yv)) {
            ++illegal;
            continue;
          }
          const double diff = std::fabs(ye - yv), mx = std::max(std::fabs(ye), std::fabs(yv));
          if (diff == 0.0) continue;
          if (diff <= tol_.equal_rel * mx + tol_.equal_abs_rel * M) {
            if (tol_.quantised) head.set_stored(r, c, ye), took = true;  // a scale ulps apart: the backend's bits
            continue;
          }
          if (tol_.quantised && diff <= kFlipSlack * (tol_.step_rel * mx + tol_.floor_rel * M + tol_.floor_abs) +
                                            tol_.arith_abs_rel * M) {
            head.set_stored(r, c, ye);  // the neighbouring code: the reference continues from it
            ++flips;
            took = true;
          } else {
            ++illegal;
          }
        }
      if (stateful_ && took)
        ref_.adopt_stored(hh, codes_.data() + hh * lay_.code_bytes, scales_.data() + hh * lay_.scale_bytes);
    }
    out_.flips += flips;
    out_.illegal += illegal;
    if (flips > 0)
      out_.max_op_flip_fraction =
          std::max(out_.max_op_flip_fraction, elements > 0 ? double(flips) / double(elements) : 1.0);
    if (illegal > 0 && out_.first_illegal_op < -1) out_.first_illegal_op = op;
  }

 private:
  ModeAwareReference& ref_;
  Mode m_;
  Dims d_;
  StoreTolerance tol_;
  StoreCheck& out_;
  StoreLayout lay_;
  std::vector<long> seen_;
  bool stateful_;  // the next store reads this one (int8_ef): a flipped code's residual is taken over with it
  std::vector<std::uint8_t> codes_, scales_;
  std::vector<float> y_;
};

long committed_tokens(const std::vector<Op>& ops) {
  long n = 0;
  for (const Op& op : ops) n += committed_by(op, 0);
  return n;
}

}  // namespace

std::unique_ptr<DecodeBackend> make_mode_aware_reference() { return std::make_unique<ModeAwareReference>(); }

ModeAwareRun run_mode_aware(DecodeBackend& be, const Mode& m, const Case& c, const CaseInputs& in,
                            const ModeAwareOptions& opt) {
  const Dims& d = in.shape.dims;
  Mode mm = m;
  mm.arch = in.shape.arch;
  Mode bm = opt.backend_mode ? *opt.backend_mode : mm;
  bm.arch = in.shape.arch;
  const StoreTolerance st =
      tolerance_vs_mode_aware(mm, d.V, d.K, committed_tokens(in.op_list), case_memory(c)).store;
  ModeAwareReference ref;
  ref.start(d, mm, in.S0.data(), opt.reference_sr_step_offset);
  be.init(d, bm, in.S0.data());
  ModeAwareRun run;
  StoreReconciler rec(ref, mm, d, st, run.stores);
  rec.check(be, -1);
  std::vector<double> o64;
  std::vector<float> of;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const Op& op = in.op_list[i];
    const TokenBatch tb = in.ops[i].view();
    const std::size_t n = std::size_t(d.B) * std::size_t(op.T) * std::size_t(d.H) * std::size_t(d.V);
    o64.assign(n, 0.0);
    of.assign(n, 0.0f);
    if (op.verify && !op.tree.empty()) {
      ref.verify_tree64(tb, op.tree.data(), o64.data());
      be.verify_tree(tb, op.tree.data(), of.data());
      std::vector<int> node(std::size_t(d.B));
      for (int b = 0; b < d.B; ++b) node[std::size_t(b)] = accepted_node(op, b);
      ref.accept_path(node.data());
      be.accept_path(node.data());
      run.ref.n_tokens += committed_by(op, 0);
      run.got.n_tokens += committed_by(op, 0);
    } else if (op.verify) {
      ref.verify64(tb, o64.data());
      be.verify(tb, of.data());
      std::vector<int> acc(std::size_t(d.B));
      for (int b = 0; b < d.B; ++b) acc[std::size_t(b)] = accepted_of(op, b);
      ref.accept(acc.data());
      be.accept(acc.data());
      run.ref.n_tokens += acc[0];
      run.got.n_tokens += acc[0];
    } else {
      ref.step64(tb, o64.data());
      be.step(tb, of.data());
      run.ref.n_tokens += 1;
      run.got.n_tokens += 1;
    }
    run.ref.o.insert(run.ref.o.end(), o64.begin(), o64.end());
    run.got.o.insert(run.got.o.end(), of.begin(), of.end());
    rec.check(be, long(i));
  }
  run.ref.state.resize(d.state_elems());
  ref.state64(run.ref.state.data());
  std::vector<float> S(d.state_elems());
  be.state(S.data());
  run.got.state.assign(S.begin(), S.end());
  ref.stored(run.ref.codes, run.ref.scales);
  be.stored(run.got.codes, run.got.scales);
  run.ref.flushes = ref.flushes();
  run.got.flushes = be.flushes();
  return run;
}

CheckRow check_vs_mode_aware(const Mode& m, const Case& c, const CaseInputs& in, const ModeAwareRun& run,
                             const CaseOutputs* fp64) {
  CheckRow row = base_row(m, c, in, "fp64-mode");
  Mode mm = m;
  mm.arch = in.shape.arch;
  const ModeAwareTolerance t =
      tolerance_vs_mode_aware(mm, in.shape.dims.V, in.shape.dims.K, run.ref.n_tokens, case_memory(c));
  row.tol = t.out_state;
  row.out = compare(run.ref.o, run.got.o, row.tol);
  row.state = compare(run.ref.state, run.got.state, row.tol);
  row.stores = run.stores;
  row.max_flip_fraction = t.store.max_flip_fraction;
  const double allowed = t.store.max_flip_fraction * double(run.stores.elements) + kFlipCountSlack;
  std::ostringstream why;
  if (!row.out.pass) why << "output beyond the FP32 bound; ";
  if (!row.state.pass) why << "state beyond the FP32 bound; ";
  if (run.stores.layout_mismatches) why << "stored layout differs (" << run.stores.layout_mismatches << " checks); ";
  if (run.stores.illegal)
    why << run.stores.illegal << " stored elements beyond one code step (first at op " << run.stores.first_illegal_op
        << "); ";
  if (run.stores.flips > 0 && double(run.stores.flips) > allowed)
    why << run.stores.flips << " flipped codes > " << allowed << " allowed; ";
  if (run.ref.n_tokens != run.got.n_tokens) why << "token count differs; ";
  if (run.ref.flushes != run.got.flushes)
    why << "flushes " << run.got.flushes << " != " << run.ref.flushes << "; ";
  why << zero_guard(run.ref, run.got);
  row.why = why.str();
  row.pass = row.why.empty();
  if (fp64) {
    const double inf = std::numeric_limits<double>::infinity();
    row.fp64_measured = true;
    row.fp64_out = compare(fp64->o, run.got.o, Tolerance{inf, inf, 0.0});
    row.fp64_state = compare(fp64->state, run.got.state, Tolerance{inf, inf, 0.0});
  }
  return row;
}

}  // namespace replayssm::emu
