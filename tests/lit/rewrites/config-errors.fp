# An unknown config key, a bad value or a key the profile pins is a usage error (exit 64) naming the key.
# RUN: not %flashproof rewrite %s --set online_softmx=true 2>&1 | FileCheck %s --check-prefix=KEY
# RUN: not %flashproof rewrite %s --set online_softmax=maybe 2>&1 | FileCheck %s --check-prefix=VALUE
# RUN: env FLASHPROOF_ONLINE_SOFTMAX_BLOCK=-1 not %flashproof rewrite %s 2>&1 | FileCheck %s --check-prefix=ENV
# RUN: not %flashproof rewrite %s --profile reproducible --set online_softmax=on 2>&1 | FileCheck %s --check-prefix=PINNED
# RUN: not %flashproof rewrite %s --profile fastest 2>&1 | FileCheck %s --check-prefix=PROFILE
# RUN: %flashproof rewrite %s --set online_softmx=true; test $? -eq 64
# KEY: unknown config key 'online_softmx'; did you mean 'online_softmax'?
# VALUE: config key online_softmax: expected true or false, found 'maybe'
# ENV: config key online_softmax_block (from environment FLASHPROOF_ONLINE_SOFTMAX_BLOCK): expected auto or an integer >= 0
# PINNED: config key online_softmax is pinned by profile reproducible
# PROFILE: unknown profile 'fastest'

routine r {
  node x : f32[2] materialized input
  node y : f32[2] materialized output
  for i in 0..1 {
    y[i] = x[i]
  }
}
