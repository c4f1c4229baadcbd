//! Strategic merge patch, JSON patch, merge patch and 3-way merge, shared by the API server and renderers.
