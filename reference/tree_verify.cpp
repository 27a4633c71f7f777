// Draft trees (their shapes, validation and text form) and the masked GDN solve of tree verify (tree_verify.h).
#include "reference/tree_verify.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace replayssm::ref {

void DraftTree::validate() const {
  if (parent.empty()) throw std::invalid_argument("draft tree: no nodes (a tree needs at least one draft)");
  for (int i = 0; i < size(); ++i)
    if (parent[std::size_t(i)] < -1 || parent[std::size_t(i)] >= i)
      throw std::invalid_argument("draft tree: node " + std::to_string(i) + " has parent " +
                                  std::to_string(parent[std::size_t(i)]) + " (expected -1.." + std::to_string(i - 1) +
                                  ": parents come before their children)");
}

std::vector<int> DraftTree::path(int node) const {
  if (node < -1 || node >= size())
    throw std::invalid_argument("draft tree: node " + std::to_string(node) + " outside -1.." +
                                std::to_string(size() - 1));
  std::vector<int> p;
  for (int j = node; j >= 0; j = parent[std::size_t(j)]) p.insert(p.begin(), j);
  return p;
}

bool DraftTree::is_chain() const {
  for (int i = 0; i < size(); ++i)
    if (parent[std::size_t(i)] != i - 1) return false;
  return true;
}

DraftTree DraftTree::chain(int T) {
  if (T < 1) throw std::invalid_argument("draft tree: chain needs T >= 1, got " + std::to_string(T));
  DraftTree t;
  for (int i = 0; i < T; ++i) t.parent.push_back(i - 1);
  return t;
}

DraftTree DraftTree::star(int T) {
  if (T < 1) throw std::invalid_argument("draft tree: star needs T >= 1, got " + std::to_string(T));
  return DraftTree{std::vector<int>(std::size_t(T), -1)};
}

DraftTree DraftTree::binary(int depth) {
  if (depth < 1 || depth > 20)
    throw std::invalid_argument("draft tree: binary needs a depth in 1..20, got " + std::to_string(depth));
  return branching(std::vector<int>(std::size_t(depth), 2));
}

DraftTree DraftTree::branching(const std::vector<int>& b) {
  if (b.empty()) throw std::invalid_argument("draft tree: empty branching list");
  DraftTree t;
  std::vector<int> level = {-1};  // the nodes of the previous depth
  long long total = 0;
  for (std::size_t d = 0; d < b.size(); ++d) {
    if (b[d] < 1)
      throw std::invalid_argument("draft tree: branching at depth " + std::to_string(d + 1) + " is " +
                                  std::to_string(b[d]) + " (expected >= 1)");
    total += (long long)level.size() * b[d];
    if (total > (1 << 20)) throw std::invalid_argument("draft tree: branching list gives more than 2^20 nodes");
    std::vector<int> next;
    for (int p : level)
      for (int c = 0; c < b[d]; ++c) {
        next.push_back(t.size());
        t.parent.push_back(p);
      }
    level = next;
  }
  return t;
}

namespace {

int parse_count(const std::string& text, const std::string& part, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(part.c_str(), &end, 10);
  if (part.empty() || *end != '\0' || errno == ERANGE || n < 1 || n > 1000000)
    throw std::invalid_argument("tree '" + text + "': " + what + " must be a positive integer, got '" + part + "'");
  return int(n);
}

}  // namespace

DraftTree tree_from_text(const std::string& text, int max_nodes) {
  const std::size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  const bool has_arg = colon != std::string::npos;
  const std::string arg = has_arg ? text.substr(colon + 1) : std::string();
  DraftTree t;
  if (kind == "chain") {
    t = DraftTree::chain(has_arg ? parse_count(text, arg, "the chain length") : 8);
  } else if (kind == "star") {
    t = DraftTree::star(has_arg ? parse_count(text, arg, "the star size") : 8);
  } else if (kind == "binary") {
    const int d = has_arg ? parse_count(text, arg, "the binary depth") : 3;
    if (d > 20) throw std::invalid_argument("tree '" + text + "': the binary depth must be <= 20");
    t = DraftTree::binary(d);
  } else if (!has_arg && !text.empty() && text.find_first_not_of("0123456789,") == std::string::npos) {
    std::vector<int> b;
    for (std::size_t s = 0;;) {
      const std::size_t e = text.find(',', s);
      b.push_back(parse_count(text, text.substr(s, e == std::string::npos ? std::string::npos : e - s),
                              "every branching factor"));
      if (e == std::string::npos) break;
      s = e + 1;
    }
    t = DraftTree::branching(b);
  } else {
    throw std::invalid_argument("tree '" + text +
                                "': expected chain[:T], binary[:DEPTH], star[:T] or a branching list like 4,2,2,1");
  }
  if (t.size() > max_nodes)
    throw std::invalid_argument("tree '" + text + "' has " + std::to_string(t.size()) + " nodes (at most " +
                                std::to_string(max_nodes) + ")");
  return t;
}

std::vector<Eigen::VectorXd> gdn_tree_u(const std::vector<HeadToken>& toks, const DraftTree& tree,
                                        const std::vector<Eigen::VectorXd>& S0_k) {
  tree.validate();
  const std::size_t T = toks.size();
  if (std::size_t(tree.size()) != T || S0_k.size() != T)
    throw std::invalid_argument("gdn_tree_u: tree, tokens and S0_k must have one entry per node");
  std::vector<Eigen::VectorXd> U(T);
  std::vector<double> Gamma(T);  // gamma_{1:i} along node i's path
  for (std::size_t i = 0; i < T; ++i) {
    const HeadToken& ti = toks[i];
    const int p = tree.parent[i];
    Gamma[i] = (p < 0 ? 1.0 : Gamma[std::size_t(p)]) * ti.a;
    Eigen::VectorXd u = ti.beta * (ti.v - Gamma[i] * S0_k[i]);
    double gamma = ti.a;  // gamma_{j+1:i} for j = parent(i)
    for (int j = p; j >= 0; j = tree.parent[std::size_t(j)]) {
      u -= (ti.beta * gamma * toks[std::size_t(j)].k.dot(ti.k)) * U[std::size_t(j)];
      gamma *= toks[std::size_t(j)].a;
    }
    U[i] = u;
  }
  return U;
}

Eigen::VectorXd tree_node_recurrent(Recurrence r, const Eigen::MatrixXd& S, const std::vector<HeadToken>& toks,
                                    const DraftTree& tree, int node, Eigen::MatrixXd* state_out) {
  if (node < 0) throw std::invalid_argument("tree_node_recurrent: node must be >= 0");
  Eigen::MatrixXd Sp = S;
  Eigen::VectorXd o;
  for (int j : tree.path(node)) o = recurrent_step(r, Sp, toks[std::size_t(j)]);
  if (state_out) *state_out = Sp;
  return o;
}

}  // namespace replayssm::ref
