set(FEDLEAF_PRIVACY_SOURCES
  discrete_gaussian.cc
  dp_ftrl_accountant.cc
  grid_gaussian.cc
  privacy_plan.cc
  tree_sensitivity.cc
  zcdp_conversion.cc
)
