#pragma once
// The row-wise operations of teacher_force (forward.cpp), for code that runs the same model on other row layouts (the
// draft-tree forward, runtime/tree_forward.h). They are teacher_force's own helpers, so a row computed through them
// has teacher_force's bits for the same inputs; every one is row-wise, so the row count never changes a row's value.
#include "runtime/model.h"

namespace replayssm::runtime::rowwise {

// X W^T (runtime/gemm.h: one fma chain per element).
Mat project(const Mat& X, const Mat& W, int threads);
// Row-wise x / sqrt(mean(x^2) + eps) * w.
Mat rms_norm(const Mat& X, const Vec& w, double eps, int threads);
// The same over consecutive groups of `width` columns, in place (w has `width` or cols entries).
void rms_norm_groups(Mat& X, Eigen::Index width, const Vec& w, double eps, int threads);
// x * sigmoid(x), with ref::sigmoid's operations.
double silu(double x);
// a <- silu(a) * b (the MLP gate), element-wise.
void silu_times(Mat& a, const Mat& b, int threads);
// a <- a * silu(b) (the SSM output gate), element-wise.
void times_silu(Mat& a, const Mat& b, int threads);

}  // namespace replayssm::runtime::rowwise
