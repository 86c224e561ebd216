//! One module per subcommand.

pub mod pin;
pub mod place;
pub mod topology;
pub mod topology_source;
