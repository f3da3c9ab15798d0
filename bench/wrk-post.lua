-- The bench's SendMessage for wrk: the same request agentd-bench `send` makes.
wrk.method = "POST"
wrk.body   = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"tck-complete-task-bench","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
