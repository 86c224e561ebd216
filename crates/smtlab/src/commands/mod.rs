//! One module per subcommand.

pub mod client_side;
pub mod compare;
pub mod completions;
pub mod doctor;
pub mod gate;
pub mod list;
pub mod load;
pub mod load_chat;
pub mod man;
pub mod merge;
pub mod pairs;
pub mod pin;
pub mod place;
pub mod program_args;
pub mod rank;
pub mod rank_worker;
pub mod report;
pub mod results;
pub mod run;
pub mod runs;
pub mod serve;
pub mod show;
pub mod study;
pub mod topology;
pub mod topology_source;
pub mod worker;
