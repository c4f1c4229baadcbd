//! Pure targeting: which clusters a bundle goes to, with which options, in which rollout partition.
