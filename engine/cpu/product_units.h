#pragma once
// Several products shared out in one fork of the thread team (run_team_units, thread_pool.h): their work units are
// laid end to end, product 0's first, so one claimed range [u0, u1) may cover the end of one product and the start
// of the next. The one mapping between the two numberings, used by every linear path that forks once for several
// weights (matmul.cpp's run_products, quant_int8_linear.cpp), so that they cannot disagree.
#include <algorithm>

namespace specscope::cpu::detail {

// The units of products 0..count-1 laid end to end, where product i has units_of(i).
template <class UnitsOf>
int total_product_units(int count, UnitsOf units_of) {
  int units = 0;
  for (int i = 0; i < count; ++i) units += units_of(i);
  return units;
}

// Calls body(i, b0, b1) for each product i that the units [u0, u1) overlap, with [b0, b1) its own units among them
// (numbered from its own first), in product order.
template <class UnitsOf, class Body>
void for_each_product_units(int count, int u0, int u1, UnitsOf units_of, Body body) {
  int first = 0;  // units before product i
  for (int i = 0; i < count && first < u1; ++i) {
    const int ui = units_of(i);
    const int b0 = std::max(u0, first) - first, b1 = std::min(u1, first + ui) - first;
    first += ui;
    if (b0 < b1) body(i, b0, b1);
  }
}

}  // namespace specscope::cpu::detail
