//! CEL guards (`when`, switch cases), evaluated over the run's scope:
//! `inputs`, `run` and `steps` (`steps.<id>.output`, `steps.<id>.status`).

use serde_json::Value;

/// What templates and guards see of a run.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub inputs: Value,
    /// `{id, workflow, task_id}`.
    pub run: Value,
    /// `{<step id>: {output, status}}`.
    pub steps: Value,
}

impl Scope {
    pub(crate) fn root(&self, name: &str) -> Option<&Value> {
        match name {
            "inputs" => Some(&self.inputs),
            "run" => Some(&self.run),
            "steps" => Some(&self.steps),
            _ => None,
        }
    }
}

/// A compiled guard.
pub struct Guard {
    program: cel::Program,
    source: String,
}

impl Guard {
    /// Compiles `source`; the error says what is wrong with it.
    pub fn compile(source: &str) -> Result<Guard, String> {
        // The parser is third-party code: a panic on odd input must not
        // take the daemon down.
        let parsed = std::panic::catch_unwind(|| cel::Program::compile(source));
        match parsed {
            Ok(Ok(program)) => Ok(Guard { program, source: source.to_owned() }),
            Ok(Err(e)) => Err(format!("{source:?} is not a CEL expression: {e}")),
            Err(_) => Err(format!("{source:?} is not a CEL expression")),
        }
    }

    /// Evaluates to a boolean; anything else is an error naming the guard.
    pub fn eval(&self, scope: &Scope) -> Result<bool, String> {
        let mut ctx = cel::Context::default();
        for (name, v) in [("inputs", &scope.inputs), ("run", &scope.run), ("steps", &scope.steps)] {
            let v = cel::to_value(v).map_err(|e| format!("guard {:?}: {name}: {e}", self.source))?;
            ctx.add_variable_from_value(name, v);
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.program.execute(&ctx)));
        match result {
            Ok(Ok(cel::Value::Bool(b))) => Ok(b),
            Ok(Ok(other)) => Err(format!("guard {:?} gave {other:?}, not a boolean", self.source)),
            Ok(Err(e)) => Err(format!("guard {:?} failed: {e}", self.source)),
            Err(_) => Err(format!("guard {:?} could not be evaluated", self.source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guards_see_inputs_and_step_outputs() {
        let scope = Scope {
            inputs: json!({"n": 3}),
            run: json!({"id": "r"}),
            steps: json!({"ask": {"output": {"approve": true}, "status": "done"}}),
        };
        assert!(Guard::compile("inputs.n > 2 && steps.ask.output.approve").unwrap().eval(&scope).unwrap());
        assert!(!Guard::compile("steps.ask.output.approve == false").unwrap().eval(&scope).unwrap());
        assert!(Guard::compile("run.id").unwrap().eval(&scope).unwrap_err().contains("not a boolean"));
        assert!(Guard::compile("inputs.n >").is_err());
    }
}
