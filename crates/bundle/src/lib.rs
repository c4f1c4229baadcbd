//! A directory → Bundles, as upstream `fleet apply` does it offline.
