//! The per-connection loop of the blocking models (`process`, `thread`). Not built yet.
