set(FEDLEAF_AGGREGATION_SOURCES
  round_aggregator.cc
  sparse_sum_accumulator.cc
  sparse_sum_operator.cc
  update_encoding.cc
  update_plan.cc
)
