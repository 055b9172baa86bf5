// Transpose -> Reshape -> Transpose cancellation (see transpose_reshape.h).
//
// Why moving the Transpose past the Reshape is exact. Let x have dims
// x_0..x_{n-1} and a = Transpose(x, p), so axis k of a is axis p[k] of x
// and a[i_0..i_{n-1}] = x[j] with j_{p[k]} = i_k. Let r = Reshape(a, s)
// where s merges runs of adjacent axes of a: run R_t = [b_t, e_t) becomes
// axis t of r, of size prod(a dims in R_t). Reshape keeps the row-major
// element order, so merging adjacent axes means r's index u_t is the
// row-major combination of (i_{b_t}, .., i_{e_t - 1}) with their sizes.
// If p maps R_t to x axes p[b_t], p[b_t]+1, .., p[b_t]+(e_t-b_t)-1 (the
// same sizes, consecutive and ascending), u_t is also the row-major
// combination of x's indices on those axes. The runs partition a's axes,
// so their images partition x's axes into consecutive runs; ordered by
// where they start in x, these give m = Reshape(x, s'), whose axis
// pos(t) is the merge of R_t's image, again by row-major order. Hence
// r[u_0..u_{m-1}] = m[v] with v_{pos(t)} = u_t, i.e. r = Transpose(m, q)
// with q[t] = pos(t) (ONNX: output axis t is input axis q[t]). Two
// Transposes compose: Transpose(Transpose(m, q), p2) has output axis j =
// axis p2[j] of the first output = axis q[p2[j]] of m; when that is the
// identity the data never moves and only the Reshape is left.
#include "ir/transpose_reshape.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph_index.h"
#include "ir/symbolic_shapes.h"

namespace vigil::ir {
namespace {

using Perm = std::vector<int64_t>;

// One chain to rewrite, by node index.
struct Chain {
  size_t first = 0;                   // Transpose(x, p1)
  std::optional<size_t> reshape;      // Reshape between them, if any
  size_t second = 0;                  // Transpose(., p2), writes z
  Perm perm;                          // what the second Transpose applies now
  std::vector<int64_t> target;        // the new Reshape's target
  std::vector<Dim> merged;            // the new Reshape output's dims
};

bool IsDefault(const Node& n, const char* op, size_t inputs) {
  return n.op_type == op && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs.size() == inputs &&
         n.outputs.size() == 1 && !n.outputs[0].empty();
}

bool IsPermutation(const Perm& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t v : p) {
    if (v < 0 || static_cast<size_t>(v) >= p.size() || seen[static_cast<size_t>(v)]) return false;
    seen[static_cast<size_t>(v)] = true;
  }
  return true;
}

bool IsIdentity(const Perm& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The permutation Transpose `n` applies to an input of `rank` axes (absent
// perm: reversed), or nullopt when it is not a valid one.
std::optional<Perm> PermOf(const Node& n, std::optional<size_t> rank) {
  const Attribute* a = n.FindAttribute("perm");
  Perm p;
  if (a) {
    if (a->type != AttributeType::kInts) return std::nullopt;
    p = a->ints;
  } else {
    if (!rank) return std::nullopt;
    for (size_t i = *rank; i > 0; --i) p.push_back(static_cast<int64_t>(i - 1));
  }
  if (!IsPermutation(p) || (rank && p.size() != *rank)) return std::nullopt;
  return p;
}

// Transpose(Transpose(., first), second) as one permutation.
Perm Compose(const Perm& first, const Perm& second) {
  Perm out(second.size());
  for (size_t j = 0; j < second.size(); ++j) out[j] = first[static_cast<size_t>(second[j])];
  return out;
}

// Every value read by a node inside a subgraph of `g` (at any depth): such
// reads of outer values are invisible to GraphIndex's consumer lists.
void CollectReads(const Graph& g, std::unordered_set<std::string>& out) {
  for (const Node& n : g.nodes) {
    out.insert(n.inputs.begin(), n.inputs.end());
    for (const Attribute& a : n.attributes) {
      if (a.g) CollectReads(*a.g, out);
      for (const auto& sub : a.graphs) {
        if (sub) CollectReads(*sub, out);
      }
    }
  }
}

std::unordered_set<std::string> SubgraphReads(const Graph& g) {
  std::unordered_set<std::string> out;
  for (const Node& n : g.nodes) {
    for (const Attribute& a : n.attributes) {
      if (a.g) CollectReads(*a.g, out);
      for (const auto& sub : a.graphs) {
        if (sub) CollectReads(*sub, out);
      }
    }
  }
  return out;
}

// Runs [begin, end) of adjacent axes of `a` whose products are the dims of
// `r`, in order; nullopt when r is not such a merge of a. Dims must be
// positive (a 0 would make every split match).
std::optional<std::vector<std::pair<size_t, size_t>>> MergedRuns(const SymShape& a, const SymShape& r) {
  for (const SymDim& d : a) {
    if (d.coeff <= 0) return std::nullopt;
  }
  std::vector<std::pair<size_t, size_t>> runs;
  size_t i = 0;
  for (const SymDim& want : r) {
    if (i >= a.size()) return std::nullopt;
    const size_t begin = i;
    std::optional<SymDim> product = a[i++];
    while (product && !(*product == want) && i < a.size()) product = MulDims(*product, a[i++]);
    if (!product || !(*product == want)) return std::nullopt;
    runs.emplace_back(begin, i);
  }
  // Trailing dims of 1 belong to the last run (they change no product).
  for (; i < a.size(); ++i) {
    if (runs.empty() || !(a[i] == SymDim::Known(1))) return std::nullopt;
    runs.back().second = i + 1;
  }
  return runs;
}

// The Reshape target that gives `merged` from x of rank `rank`: known dims
// as numbers, a dim that is x's own axis at the same position as 0 (copy),
// at most one other as -1; nullopt when that cannot say it.
std::optional<std::vector<int64_t>> TargetFor(const SymShape& merged, const std::vector<std::pair<size_t, size_t>>& axes) {
  std::vector<int64_t> target;
  bool inferred = false;
  for (size_t i = 0; i < merged.size(); ++i) {
    if (merged[i].known()) {
      target.push_back(merged[i].coeff);
    } else if (axes[i].second == axes[i].first + 1 && axes[i].first == i) {
      target.push_back(0);
    } else if (!inferred) {
      target.push_back(-1);
      inferred = true;
    } else {
      return std::nullopt;
    }
  }
  return target;
}

class ChainFinder {
 public:
  ChainFinder(const Model& model, const std::unordered_map<std::string, TypeInfo>& types)
      : g_(model.graph),
        idx_(IndexGraph(model.graph)),
        types_(types),
        sym_(model.graph, idx_, types, model.OpsetVersion("")),
        hidden_(SubgraphReads(model.graph)) {}

  // The first chain that starts at a Transpose, or nullopt.
  std::optional<Chain> Find() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (std::optional<Chain> c = From(i)) return c;
    }
    return std::nullopt;
  }

 private:
  std::optional<Chain> From(size_t first);
  bool ThroughReshape(Chain& c, const Perm& p1);
  std::optional<size_t> RankOf(const std::string& value) const;
  // The single node that reads `value`, once, as its input 0, where `value`
  // is no graph output and no subgraph reads it.
  std::optional<size_t> OnlyReader(const std::string& value) const;

  const Graph& g_;
  GraphIndex idx_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  SymbolicShapes sym_;
  std::unordered_set<std::string> hidden_;
};

std::optional<size_t> ChainFinder::RankOf(const std::string& value) const {
  auto it = types_.find(value);
  if (it == types_.end() || it->second.kind != TypeInfo::Kind::kTensor || !it->second.shape.rank_known) {
    return std::nullopt;
  }
  return it->second.shape.dims.size();
}

std::optional<size_t> ChainFinder::OnlyReader(const std::string& value) const {
  auto users = idx_.consumers.find(value);
  if (users == idx_.consumers.end() || users->second.size() != 1 || idx_.outputs.count(value) ||
      hidden_.count(value)) {
    return std::nullopt;
  }
  const Node& n = g_.nodes[users->second[0]];
  if (n.inputs[0] != value || std::count(n.inputs.begin(), n.inputs.end(), value) != 1) return std::nullopt;
  return users->second[0];
}

std::optional<Chain> ChainFinder::From(size_t first) {
  const Node& t1 = g_.nodes[first];
  if (!IsDefault(t1, "Transpose", 1) || t1.inputs[0].empty()) return std::nullopt;
  const std::optional<Perm> p1 = PermOf(t1, RankOf(t1.inputs[0]));
  const std::optional<size_t> next = OnlyReader(t1.outputs[0]);
  if (!p1 || !next) return std::nullopt;
  Chain c;
  c.first = first;
  const Node& n = g_.nodes[*next];
  if (IsDefault(n, "Transpose", 1)) {
    const std::optional<Perm> p2 = PermOf(n, p1->size());
    if (!p2) return std::nullopt;
    c.second = *next;
    c.perm = Compose(*p1, *p2);
    // With nothing to write z, z's readers read x instead: impossible when
    // z is a graph output (or read by a subgraph, which keeps its name).
    if (IsIdentity(c.perm) && (idx_.outputs.count(n.outputs[0]) || hidden_.count(n.outputs[0]))) return std::nullopt;
    return c;
  }
  if (!IsDefault(n, "Reshape", 2)) return std::nullopt;
  c.reshape = *next;
  if (!ThroughReshape(c, *p1)) return std::nullopt;
  return c;
}

bool ChainFinder::ThroughReshape(Chain& c, const Perm& p1) {
  const Node& reshape = g_.nodes[*c.reshape];
  const std::optional<size_t> last = OnlyReader(reshape.outputs[0]);
  if (!last || !IsDefault(g_.nodes[*last], "Transpose", 1)) return false;
  const std::string& x = g_.nodes[c.first].inputs[0];
  const std::optional<SymShape> xs = sym_.ShapeOf(x);
  const std::optional<SymShape> rs = sym_.ShapeOf(reshape.outputs[0]);
  const std::optional<size_t> xrank = RankOf(x);
  if (!xs || !rs || xs->size() != p1.size() || !xrank || *xrank != p1.size()) return false;
  const std::optional<Perm> p2 = PermOf(g_.nodes[*last], rs->size());
  if (!p2) return false;
  SymShape as;  // a = Transpose(x, p1)
  for (int64_t k : p1) as.push_back((*xs)[static_cast<size_t>(k)]);
  const auto runs = MergedRuns(as, *rs);
  if (!runs) return false;
  // Each run's image in x: consecutive ascending axes [p1[b], p1[b]+len).
  std::vector<std::pair<size_t, size_t>> image;
  for (auto [b, e] : *runs) {
    for (size_t k = b + 1; k < e; ++k) {
      if (p1[k] != p1[k - 1] + 1) return false;
    }
    image.emplace_back(static_cast<size_t>(p1[b]), static_cast<size_t>(p1[b]) + (e - b));
  }
  std::vector<size_t> order(image.size());  // runs by where their image starts in x
  for (size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::sort(order.begin(), order.end(), [&](size_t u, size_t v) { return image[u].first < image[v].first; });
  Perm q(image.size());
  SymShape merged;
  std::vector<std::pair<size_t, size_t>> merged_axes;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    q[order[pos]] = static_cast<int64_t>(pos);
    merged.push_back((*rs)[order[pos]]);
    merged_axes.push_back(image[order[pos]]);
  }
  const std::optional<std::vector<int64_t>> target = TargetFor(merged, merged_axes);
  if (!target) return false;
  const TypeInfo& xt = types_.at(x);
  for (size_t pos = 0; pos < merged.size(); ++pos) {
    const auto [b, e] = merged_axes[pos];
    if (e == b + 1) {
      c.merged.push_back(xt.shape.dims[b]);  // one axis: its typed dim, symbol name and all
    } else {
      c.merged.push_back(merged[pos].known() ? Dim::Known(merged[pos].coeff) : Dim{});
    }
  }
  c.second = *last;
  c.perm = Compose(q, *p2);
  c.target = *target;
  return true;
}

// A name no value of `g` has, starting from `base`.
std::string Fresh(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  taken.insert(name);
  return name;
}

std::unordered_set<std::string> NamesOf(const Graph& g) {
  std::unordered_set<std::string> taken;
  for (const Node& n : g.nodes) {
    taken.insert(n.inputs.begin(), n.inputs.end());
    taken.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const Tensor& t : g.initializers) taken.insert(t.name);
  for (const ValueInfo& v : g.inputs) taken.insert(v.name);
  for (const ValueInfo& v : g.outputs) taken.insert(v.name);
  return taken;
}

Tensor Int64Vector(std::string name, std::vector<int64_t> values) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kInt64;
  t.dims = {static_cast<int64_t>(values.size())};
  auto data = std::make_shared<std::vector<int64_t>>(std::move(values));
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data->data()), data->size() * sizeof(int64_t)};
  t.keep_alive = data;
  return t;
}

void SetPerm(Node& n, const Perm& perm) {
  for (Attribute& a : n.attributes) {
    if (a.name == "perm") {
      a.type = AttributeType::kInts;
      a.ints = perm;
      return;
    }
  }
  Attribute a;
  a.name = "perm";
  a.type = AttributeType::kInts;
  a.ints = perm;
  n.attributes.push_back(std::move(a));
}

// Removes, starting from `values`, every node none of whose outputs is read
// any more (nor a graph output), and the initializers among them that
// nothing reads: the shape arithmetic behind a Reshape target that is gone.
void DropOrphans(Graph& g, std::vector<std::string> values) {
  std::unordered_map<std::string, size_t> readers, producer;
  std::unordered_set<std::string> kept = SubgraphReads(g);
  for (const ValueInfo& v : g.outputs) kept.insert(v.name);
  for (const ValueInfo& v : g.inputs) kept.insert(v.name);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& in : g.nodes[i].inputs) ++readers[in];
    for (const std::string& out : g.nodes[i].outputs) producer[out] = i;
  }
  std::vector<bool> dead(g.nodes.size(), false);
  std::unordered_set<std::string> dead_constants;
  while (!values.empty()) {
    const std::string v = std::move(values.back());
    values.pop_back();
    if (v.empty() || readers[v] > 0 || kept.count(v)) continue;
    auto p = producer.find(v);
    if (p == producer.end()) {
      dead_constants.insert(v);
      continue;
    }
    const Node& n = g.nodes[p->second];
    const bool unread = std::all_of(n.outputs.begin(), n.outputs.end(), [&](const std::string& o) {
      return o.empty() || (readers[o] == 0 && !kept.count(o));
    });
    if (dead[p->second] || !unread) continue;
    dead[p->second] = true;
    for (const std::string& in : n.inputs) {
      --readers[in];
      values.push_back(in);
    }
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!dead[i]) nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  std::erase_if(g.initializers, [&](const Tensor& t) { return dead_constants.count(t.name) > 0; });
}

// Rewrites `c` in `model`, recording new values' types in `types`.
void Apply(Model& model, const Chain& c, std::unordered_map<std::string, TypeInfo>& types) {
  Graph& g = model.graph;
  std::vector<bool> removed(g.nodes.size(), false);
  std::vector<std::string> orphans;
  const std::string x = g.nodes[c.first].inputs[0];
  const std::string z = g.nodes[c.second].outputs[0];
  const bool identity = IsIdentity(c.perm);
  removed[c.first] = true;
  if (c.reshape) {
    std::unordered_set<std::string> taken = NamesOf(g);
    Node& reshape = g.nodes[*c.reshape];
    orphans.push_back(reshape.inputs[1]);
    const std::string base = reshape.outputs[0];
    Tensor target = Int64Vector(Fresh(taken, base + "/merged_shape"), c.target);
    reshape.inputs = {x, target.name};
    reshape.attributes.clear();  // allowzero: 0 in the target copies, as written
    TypeInfo shape_type;
    shape_type.kind = TypeInfo::Kind::kTensor;
    shape_type.elem_type = DataType::kInt64;
    shape_type.shape.rank_known = true;
    shape_type.shape.dims = {Dim::Known(static_cast<int64_t>(c.target.size()))};
    types[target.name] = shape_type;
    g.initializers.push_back(std::move(target));
    if (identity) {
      reshape.outputs = {z};
      removed[c.second] = true;
    } else {
      const std::string merged = Fresh(taken, base + "/merged");
      reshape.outputs = {merged};
      TypeInfo t = types.at(x);
      t.shape.dims = c.merged;
      types[merged] = std::move(t);
      g.nodes[c.second].inputs = {merged};
      SetPerm(g.nodes[c.second], c.perm);
    }
  } else if (identity) {
    removed[c.second] = true;
    for (Node& n : g.nodes) std::replace(n.inputs.begin(), n.inputs.end(), z, x);
  } else {
    g.nodes[c.second].inputs = {x};
    SetPerm(g.nodes[c.second], c.perm);
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!removed[i]) nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  DropOrphans(g, std::move(orphans));
}

}  // namespace

Result<size_t> CancelTransposeReshape(Model& model, std::unordered_map<std::string, TypeInfo>& types) {
  size_t rewritten = 0;
  // Each rewrite removes at least one Transpose, so this ends; the bound is
  // a guard only.
  const size_t limit = model.graph.nodes.size();
  while (rewritten < limit) {
    std::optional<Chain> chain;
    {
      ChainFinder finder(model, types);
      chain = finder.Find();
    }
    if (!chain) break;
    Apply(model, *chain, types);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace vigil::ir
