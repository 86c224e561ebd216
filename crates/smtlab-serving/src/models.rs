//! A server's models (its architectures or designs) as an enum with their
//! names: both servers declare theirs with [`server_models!`](crate::server_models).

/// Declares a server's model enum with `ALL` (every model, in the order
/// given), `name()` (its name on the command line and in the store),
/// `Display` and `Serialize` (the name) and `FromStr` (by name, else the error type it
/// declares, whose message lists the valid names).
///
/// A macro rather than a crate such as strum: the parse error must be the
/// server's own type with a message naming what would be valid, and the
/// four pieces are all there is.
#[macro_export]
macro_rules! server_models {
    (
        $(#[$meta:meta])*
        pub enum $model:ident { $($(#[$vmeta:meta])* $variant:ident = $name:literal),+ $(,)? }
        $(#[$emeta:meta])*
        pub struct $unknown:ident;
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        pub enum $model {
            $($(#[$vmeta])* #[serde(rename = $name)] $variant),+
        }

        impl $model {
            pub const ALL: [$model; [$($name),+].len()] = [$($model::$variant),+];

            pub fn name(self) -> &'static str {
                match self {
                    $($model::$variant => $name),+
                }
            }
        }

        impl std::fmt::Display for $model {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        #[derive(Debug, thiserror::Error, PartialEq, Eq)]
        $(#[$emeta])*
        pub struct $unknown(pub String);

        impl std::str::FromStr for $model {
            type Err = $unknown;
            fn from_str(s: &str) -> Result<$model, $unknown> {
                $model::ALL
                    .into_iter()
                    .find(|m| m.name() == s)
                    .ok_or_else(|| $unknown(s.to_string()))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    crate::server_models! {
        /// Two test models.
        pub enum Shape { Round = "round", Square = "square" }
        #[error("unknown shape `{0}`; expected round or square")]
        pub struct UnknownShape;
    }

    #[test]
    fn models_parse_print_and_list_by_name() {
        assert_eq!(Shape::ALL, [Shape::Round, Shape::Square]);
        assert_eq!(Shape::Square.to_string(), "square");
        assert_eq!(Shape::from_str("round"), Ok(Shape::Round));
        assert_eq!(
            Shape::from_str("oval").unwrap_err().to_string(),
            "unknown shape `oval`; expected round or square"
        );
        assert_eq!(serde_json::to_string(&Shape::Round).unwrap(), "\"round\"");
    }
}
