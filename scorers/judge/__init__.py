"""Judge metrics: LLM-as-a-judge conversation metrics at a fraction of the usual judge cost.

Each metric is logic (`relevancy`, `role`, `retention`, `completeness`, `geval`) plus a prompt
template (`prompts/*.txt`) plus a pydantic answer schema (`schemas`). A metric builds `Task`s; a
judge answers them: `client.EndpointJudge` (any OpenAI-compatible endpoint) or
`heuristic.HeuristicJudge` (no model, no network; the default). `evaluate.JudgeEvaluator` runs the
configured metrics on one closed, sampled session and returns `Score`s.
"""
