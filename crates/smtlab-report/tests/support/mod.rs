//! Helpers of the report's integration tests.
pub mod chromium;
