// rho-zCDP -> (epsilon, delta)-DP, the tight conversion through Renyi divergences.
//
//   double eps = epsilon_from_zcdp(0.25 * 0.25 / 2, 1e-3);   // 0.68800245548780...
//
// Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020
// (arXiv:2004.00010), Section 2.3: Proposition 12 (an (alpha, tau)-Renyi bound gives
// (epsilon, delta)-DP with delta = exp((alpha-1)(tau-epsilon)) / (alpha-1) * (1-1/alpha)^alpha)
// and Corollary 13 (rho-zCDP is an (alpha, alpha rho)-Renyi bound for every alpha > 1). Solved
// for epsilon: epsilon(alpha) = alpha rho + (log(1/delta) - log alpha) / (alpha - 1)
// + log(1 - 1/alpha), minimised over alpha. Its derivative is rho + log(alpha delta)/(alpha-1)^2,
// increasing in alpha, so the minimiser is found by bisection on the derivative's sign. Every
// alpha > 1 gives a valid bound: the value returned is epsilon at the bisection's upper end
// (never below the true infimum's bound by rounding of the search). Tighter than the usual
// rho + 2 sqrt(rho log(1/delta)) (Bun and Steinke 2016, Proposition 1.3).
#pragma once

namespace fedleaf::core {

// epsilon >= 0; 0 when rho is 0. InvalidInput unless rho is finite and >= 0 and 0 < delta < 1
// (messages name "rho" and "delta").
double epsilon_from_zcdp(double rho, double delta, const char* delta_name = "delta");

}  // namespace fedleaf::core
