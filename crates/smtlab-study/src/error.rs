//! Why a study's reference server cannot be measured here: the web
//! study's nginx and the chat study's ngircd, each found (or not) by the
//! caller, so that the plans can be tested either way. A study plans
//! without the missing server and says why in its limits, with the text
//! of the server's own crate.

/// nginx is not installed: the web study measures smtlab's servers alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", smtlab_web::nginx::missing_reason())]
pub struct NginxMissing;

/// ngircd is not installed: the chat study measures smtlab's server alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", smtlab_chat::ngircd::missing_reason())]
pub struct NgircdMissing;

impl NginxMissing {
    /// Whether nginx can be measured on this machine (its binary found).
    pub fn here() -> Result<(), NginxMissing> {
        smtlab_web::nginx::find().map(drop).ok_or(NginxMissing)
    }
}

impl NgircdMissing {
    /// Whether ngircd can be measured on this machine (its binary found).
    pub fn here() -> Result<(), NgircdMissing> {
        smtlab_chat::ngircd::find().map(drop).ok_or(NgircdMissing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_reference_server_says_what_its_crate_says() {
        assert_eq!(
            NginxMissing.to_string(),
            "nginx is not installed (Debian: apt-get install nginx; scripts/setup.sh installs it)"
        );
        assert_eq!(
            NgircdMissing.to_string(),
            "ngircd is not installed (Debian: apt-get install ngircd; scripts/setup.sh installs \
             it)"
        );
    }
}
