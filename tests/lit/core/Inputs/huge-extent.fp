routine r {
  node x : f32[1048576, 1048576, 1048576] materialized input
}
