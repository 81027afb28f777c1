// Conformance test extension: session lifecycle hooks, model/thinking/session-name handlers.
export default function (pi: any) {
  let n = 0; // factory closure state: starts over with every runtime
  const tag = () => `#${++n}`;
  pi.on("session_start", async (event: any, ctx: any) => {
    ctx.ui.notify(`start ${event.reason} prev=${event.previousSessionFile ? "yes" : "no"} ${tag()}`);
  });
  pi.on("session_shutdown", async (event: any, ctx: any) => {
    ctx.ui.notify(`shutdown ${event.reason} target=${event.targetSessionFile ? "yes" : "no"} ${tag()}`);
  });
  pi.on("session_before_switch", async (event: any, ctx: any) => {
    const ok = await ctx.ui.confirm("Switch session?", `reason=${event.reason} target=${event.targetSessionFile ? "yes" : "no"}`);
    if (!ok) return { cancel: true };
    return undefined;
  });
  pi.on("model_select", async (event: any, ctx: any) => {
    ctx.ui.notify(`model ${event.previousModel ? event.previousModel.id : "-"} -> ${event.model.provider}/${event.model.id} (${event.source}) ${tag()}`);
  });
  pi.on("thinking_level_select", async (event: any, ctx: any) => {
    ctx.ui.notify(`thinking ${event.previousLevel} -> ${event.level} ${tag()}`);
  });
  pi.on("session_info_changed", async (event: any, ctx: any) => {
    ctx.ui.setTitle(`session: ${event.name ?? "-"} ${tag()}`);
  });
}
