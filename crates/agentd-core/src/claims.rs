//! Who a conversation belongs to while the task that starts it is not in
//! the store yet. A client may choose the contextId of a new conversation;
//! the store knows its owner only once its first task is committed, and a
//! blocking SendMessage commits its new task with the run's first change.
//! Without a claim, two principals sending a first turn with the same
//! contextId could both pass the store's check and share one conversation.
//!
//! A claim is taken before the store is asked and held until the task it
//! guards is committed (or abandoned), so "no one else has it" and "it is
//! mine" are one atomic step under this map's lock. In memory only: after
//! a restart nothing is pending, and the store's tasks are the record.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct ContextClaims {
    /// Per context: the claiming principal and how many claims it holds.
    held: Mutex<HashMap<String, (String, usize)>>,
}

/// A claim on a context, released when dropped.
pub struct ContextClaim {
    claims: Arc<ContextClaims>,
    context_id: String,
}

impl ContextClaims {
    /// Claims `context_id` for `owner`: `Err` with the other principal when
    /// another one holds it. The same principal may hold several claims.
    pub fn claim(self: &Arc<Self>, context_id: &str, owner: &str) -> Result<ContextClaim, String> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        match held.get_mut(context_id) {
            Some((holder, _)) if holder != owner => return Err(holder.clone()),
            Some((_, count)) => *count += 1,
            None => {
                held.insert(context_id.to_owned(), (owner.to_owned(), 1));
            }
        }
        Ok(ContextClaim { claims: self.clone(), context_id: context_id.to_owned() })
    }

    /// Contexts claimed now.
    pub fn len(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for ContextClaim {
    fn drop(&mut self) {
        let mut held = self.claims.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = held.get_mut(&self.context_id) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.context_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_excludes_other_principals_until_its_last_holder_lets_go() {
        let claims = Arc::new(ContextClaims::default());
        let a1 = claims.claim("c", "user:alice").expect("first claim");
        let a2 = claims.claim("c", "user:alice").expect("the same principal again");
        assert_eq!(claims.claim("c", "user:bob").err().as_deref(), Some("user:alice"));
        claims.claim("d", "user:bob").expect("another context is free");
        drop(a1);
        assert!(claims.claim("c", "user:bob").is_err(), "alice still holds one");
        drop(a2);
        let b = claims.claim("c", "user:bob").expect("released");
        drop(b);
        assert!(claims.is_empty(), "nothing is kept once released");
    }
}
