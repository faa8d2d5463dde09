/**
 * `/mode NAME` and `/model NAME` sent to an agent in a thread: they change that thread's
 * session (ACP session/set_mode, or the model config option or session/set_model) instead of
 * being a prompt. Any other `/name` goes to the agent as the prompt it is (ACP agents run their
 * advertised commands from prompt text).
 */
export function settingCommand(text: string): { mode: string } | { model: string } | undefined {
  const m = /^\/(mode|model)\s+(\S+)\s*$/.exec(text.trim())
  if (m === null) return undefined
  return m[1] === 'mode' ? { mode: m[2]! } : { model: m[2]! }
}
