//! Who is calling. Every request resolves to a principal before it reaches
//! the engine; the engine decides what that principal may see and do.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalRole {
    Operator,
    User,
    Agent,
    Anonymous,
}

impl PrincipalRole {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "operator" => Some(Self::Operator),
            "user" => Some(Self::User),
            "agent" => Some(Self::Agent),
            "anonymous" => Some(Self::Anonymous),
            _ => None,
        }
    }
}

/// A caller: `{id, role}`, ids like `user:alice`, `operator:local`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    pub id: String,
    pub role: PrincipalRole,
}

impl Principal {
    pub fn new(id: impl Into<String>, role: PrincipalRole) -> Self {
        Self { id: id.into(), role }
    }
    /// The development principal of a loopback listener without credentials.
    pub fn local_operator() -> Self {
        Self::new("operator:local", PrincipalRole::Operator)
    }
    pub fn is_operator(&self) -> bool {
        self.role == PrincipalRole::Operator
    }
    /// Owner-or-operator: the one visibility rule of every task and config.
    pub fn can_see(&self, owner: &str) -> bool {
        self.is_operator() || self.id == owner
    }
    /// The owner filter for listings: `None` means every owner.
    pub fn owner_filter(&self) -> Option<String> {
        if self.is_operator() { None } else { Some(self.id.clone()) }
    }
}
