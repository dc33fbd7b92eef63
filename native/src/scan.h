// The scan's predicate: evaluated on the encoded columns of a message (SQL three-valued
// logic, vortex_io.compute._evaluate) and used to prune messages by their statistics
// (vortex_io.compute._evaluate.can_skip, rule for rule). Python lowers a filter expression
// into this tree (vortex_io/_native_scan.py), literals already coerced to each column's
// storage domain.
#pragma once

#include <memory>
#include <vector>

#include "kernels.h"

namespace vx {

// A literal as the pruning rules compare it with statistics (Python values): an integer
// (exact), a float, bytes, or a bool. An integer may stand for a fractional value strictly
// between `i` and `i + 1` (`frac`), or for an infinity (`inf` = -1 or 1).
struct PLit {
  enum Kind : uint8_t { Int, Float, Bytes, Bool } kind = Int;
  i128 i = 0;
  bool frac = false;
  int inf = 0;
  double f = 0;
  std::string s;
  bool b = false;
};

struct Pred {
  enum Kind : uint8_t {
    Cmp,       // field op lit
    CmpConst,  // every valid row of the field gives `answer` (a literal out of range...)
    CmpNull,   // field op NULL: null everywhere (and never matches)
    In,        // field IN lits
    IsNull,    // field IS [NOT] NULL
    Const,     // a literal true / false / null (const_v 1 / 0 / -1)
    BoolCol,   // a bool column as the predicate
    And,
    Or,
    Not,
  } kind = Const;
  int field = -1;
  Op op = Op::Eq;
  Lit lit;
  std::vector<Lit> lits;
  bool answer = false;
  bool negated = false;
  int const_v = 0;
  // pruning: the comparison as the reference states it (its operator and literal)
  bool prunable = false;
  Op prune_op = Op::Eq;
  PLit plit;
  std::vector<PLit> plits;
  std::unique_ptr<Pred> a, b;
};

// The root struct's field `f` in a tree (nullptr when not built or not a struct node).
const Node* field_node(const Tree& t, int f);

// True when the statistics prove no row of the message satisfies `p` (can_skip).
bool can_skip(const Pred& p, const Tree& t, Ctx& c);
// The predicate's Mask over the message's rows.
Mask evaluate(const Pred& p, const Tree& t, Ctx& c);

}  // namespace vx
