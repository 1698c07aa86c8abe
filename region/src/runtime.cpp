// The process's one Runtime (runtime.hpp), constructed on first use: a
// function-local static, so its construction order is never a question.
#include "runtime.hpp"

namespace manyalloc::region::detail {

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

}  // namespace manyalloc::region::detail
