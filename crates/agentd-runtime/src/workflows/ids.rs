//! Run ids: `<workflow>-<ULID>`, where the ULID is the run task's id (a
//! UUID v7: 48 bits of milliseconds then random bits, the ULID layout)
//! written in Crockford base 32. A run id therefore names its task with
//! no table, and sorts by start time.

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The run id of a run of `workflow` tracked by task `task_id`.
pub fn run_id(workflow: &str, task_id: &str) -> String {
    let n = uuid::Uuid::parse_str(task_id).map(|u| u.as_u128()).unwrap_or(0);
    let mut out = [0u8; 26];
    for (i, c) in out.iter_mut().enumerate() {
        let shift = 5 * (25 - i);
        *c = ALPHABET[((n >> shift) & 31) as usize];
    }
    format!("{workflow}-{}", String::from_utf8_lossy(&out))
}

/// The task id a run id (or a task id) names, if it is well formed.
pub fn task_id_of(run_or_task: &str) -> Option<String> {
    if uuid::Uuid::parse_str(run_or_task).is_ok() {
        return Some(run_or_task.to_owned());
    }
    let ulid = run_or_task.rsplit_once('-')?.1;
    if ulid.len() != 26 {
        return None;
    }
    let mut n: u128 = 0;
    for (i, b) in ulid.bytes().enumerate() {
        let v = ALPHABET.iter().position(|a| *a == b.to_ascii_uppercase())? as u128;
        if i == 0 && v > 7 {
            return None; // over 128 bits
        }
        n = (n << 5) | v;
    }
    Some(uuid::Uuid::from_u128(n).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_names_its_task() {
        let task = agentd_proto::new_id();
        let run = run_id("deploy-prod", &task);
        assert!(run.starts_with("deploy-prod-") && run.len() == "deploy-prod-".len() + 26, "{run}");
        assert_eq!(task_id_of(&run).as_deref(), Some(task.as_str()));
        assert_eq!(task_id_of(&task).as_deref(), Some(task.as_str()));
        assert_eq!(task_id_of("demo-short"), None);
        assert_eq!(task_id_of("demo-ZZZZZZZZZZZZZZZZZZZZZZZZZZ"), None);
    }
}
