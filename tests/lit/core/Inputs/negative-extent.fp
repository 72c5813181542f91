routine r {
  node x : f32[-4] materialized input
}
