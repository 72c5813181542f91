routine r {
  node x : f32[4] materialized input
  node y : f32[4] materialized output
  scan t in 0..3 forward carry(p -> n : f32 = 0:f32, q -> m : f32 = p) {
    n := add.f32(p, x[t])
    m := q
  }
}
