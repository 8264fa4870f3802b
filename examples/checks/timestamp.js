#!/usr/bin/env node
// The testbed's `timestamp` check (checks/layered.py, TimestampCheck) written in JavaScript,
// driven through `testbed compare SCENARIO --check-cmd "node examples/checks/timestamp.js"`.
//
// It speaks the check protocol of docs/check-protocol.md: one JSON request per line on stdin
// (the publish start and every look so far, as Fly Machines API JSON), one JSON answer per
// line on stdout: {"wait": seconds} or {"verdict": {...}}. Each request carries the whole
// history, so this check keeps no state between requests (it ignores the run id).
//
// Three layers, as in the Python check:
//   1. poll every poll_s until every machine reads "started" (fail after start_timeout_s),
//      then look again look_delay_s later: a machine no longer started fails;
//   2. at every look, a machine the platform gave up restarting fails;
//   3. if look 2 shows a crash since the publish, look once more look_delay_s later and fail
//      if the newest crash timestamp moved forward.
// The reasons are worded, and the numbers formatted, exactly as Python words and formats
// them, so a test can compare the two checks' verdicts character for character.
"use strict";

const readline = require("node:readline");

const PROTOCOL = 1;
// The name Python's reasons use for this check (its start-timeout reason begins with it).
const NAME = "timestamp";

// --- Python's number formatting -----------------------------------------------------------

// f"{x:.1f}": Python rounds the exact binary value half to even; toFixed rounds exact ties
// away from zero. A tie at one decimal is x = m/4 with m odd (x.25, x.75): round it here.
function fixed1(x) {
  const sign = x < 0 ? "-" : "";
  const a = Math.abs(x);
  if (Number.isInteger(a * 4) && !Number.isInteger(a * 2)) {
    const low = Math.floor(a * 10);
    const n = low % 2 === 0 ? low : low + 1;
    return `${sign}${Math.floor(n / 10)}.${n % 10}`;
  }
  return sign + a.toFixed(1);
}

// f"{x:g}": six significant digits, trailing zeros dropped, exponent form outside 1e-4..1e6.
// (An exact tie at the sixth digit would round differently; no timing option has one.)
function formatG(x) {
  if (x === 0) return "0";
  const strip = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  const [mantissa, exp] = x.toExponential(5).split("e");
  const e = Number(exp);
  if (e >= -4 && e < 6) return strip(x.toFixed(5 - e));
  return `${strip(mantissa)}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

// checks/started.py wait_at_least: round up to a whole millisecond, at least one.
// Python's round(v, 6) and toFixed(6) differ only on exact ties, which cannot move the ceiling.
function waitAtLeast(seconds) {
  return { wait: Math.max(1, Math.ceil(Number((seconds * 1000).toFixed(6)))) / 1000 };
}

// --- the data: Fly Machines API objects (checks/flyjson.py) --------------------------------

function exitOf(event) {
  const request = event.request || {};
  const exit = request.exit_event || {};
  return {
    exitCode: exit.exit_code ?? 0,
    oomKilled: exit.oom_killed === true,
    requestedStop: exit.requested_stop === true,
    restarting: exit.restarting === true,
    restartCount: request.restart_count ?? 0,
  };
}

// An exit the app did not ask for: non-zero code or OOM kill, not a requested stop.
function isCrash(event) {
  if (event.type !== "exit") return false;
  const exit = exitOf(event);
  return !exit.requestedStop && (exit.oomKilled || exit.exitCode !== 0);
}

function crashesSince(machine, sinceMs) {
  return machine.events.filter((e) => isCrash(e) && e.timestamp >= sinceMs);
}

function newestExit(machine) {
  return machine.events.find((e) => e.type === "exit");
}

// The platform stopped restarting after a crash (Fly: the newest exit says restarting=false).
function gaveUp(machine) {
  if (machine.state !== "stopped" && machine.state !== "failed") return false;
  const newest = newestExit(machine);
  return newest !== undefined && isCrash(newest) && !exitOf(newest).restarting;
}

function since(ms, publishMs) {
  return `+${fixed1((ms - publishMs) / 1000)} s`;
}

function describe(machine, publishMs) {
  if (machine.events.length === 0) return `state ${machine.state}, no events`;
  const newest = machine.events[0];
  let what = newest.type;
  if (newest.type === "exit") {
    const exit = exitOf(newest);
    what = `exit code ${exit.exitCode}` + (exit.oomKilled ? " (OOM killed)" : "");
  }
  return `state ${machine.state}, newest event ${what} at ${since(newest.timestamp, publishMs)}`;
}

function verdict(ok, reason, machine, layer) {
  return { verdict: { ok, reason, machine, layer } };
}

// --- the check -----------------------------------------------------------------------------

function awaitStarted(opts, publishMs, looks) {
  if (looks.length === 0) return { wait: 0 };
  const found = looks.findIndex((look) => look.machines.every((m) => m.state === "started"));
  if (found >= 0) return found;
  const latest = looks[looks.length - 1];
  const waited = (latest.at_ms - publishMs) / 1000;
  if (waited >= opts.start_timeout_s) {
    const waiting = latest.machines.find((m) => m.state !== "started");
    return verdict(
      false,
      `${NAME}: machine ${waiting.id} never read started within ${formatG(opts.start_timeout_s)} s ` +
        `of the publish (${describe(waiting, publishMs)}); check the image's start command and boot time`,
      waiting.id,
      "start-timeout",
    );
  }
  return waitAtLeast(Math.min(opts.poll_s, opts.start_timeout_s - waited));
}

function notStarted(before, look, number, publishMs) {
  const machine = look.machines.find((m) => m.state !== "started");
  if (machine === undefined) return null;
  return verdict(
    false,
    `machine ${machine.id} read started at ${since(before.at_ms, publishMs)} but not at look ` +
      `${number} (${describe(machine, publishMs)}): it does not stay up after boot`,
    machine.id,
    "look-twice",
  );
}

function newestCrash(machine, publishMs) {
  const stamps = crashesSince(machine, publishMs).map((e) => e.timestamp);
  return stamps.length ? Math.max(...stamps) : null;
}

function next(opts, publishMs, looks) {
  if (looks.length) {
    for (const machine of looks[looks.length - 1].machines) {
      if (gaveUp(machine)) {
        const exit = newestExit(machine);
        return verdict(
          false,
          `the platform gave up restarting machine ${machine.id} after ${exitOf(exit).restartCount} ` +
            `restart(s) (${describe(machine, publishMs)}): the app crashes on every start; ` +
            "check its logs for the exit cause",
          machine.id,
          "gave-up",
        );
      }
    }
  }
  const first = awaitStarted(opts, publishMs, looks);
  if (typeof first !== "number") return first;

  const after = looks.slice(first + 1);
  if (after.length === 0) return { wait: opts.look_delay_s };
  const look2 = after[0];
  const stopped2 = notStarted(looks[first], look2, 2, publishMs);
  if (stopped2) return stopped2;
  if (after.length === 1) {
    if (look2.machines.some((m) => crashesSince(m, publishMs).length > 0)) {
      return { wait: opts.look_delay_s };
    }
    return verdict(
      true,
      `all ${look2.machines.length} machine(s) read started twice ${formatG(opts.look_delay_s)} s ` +
        "apart with no crash since the publish began",
      null,
      "look-twice",
    );
  }
  const look3 = after[1];
  const stopped3 = notStarted(look2, look3, 3, publishMs);
  if (stopped3) return stopped3;
  for (const machine3 of look3.machines) {
    const machine2 = look2.machines.find((m) => m.id === machine3.id);
    if (machine2 === undefined) continue;
    const newest2 = newestCrash(machine2, publishMs);
    const newest3 = newestCrash(machine3, publishMs);
    if (newest3 !== null && (newest2 === null || newest3 > newest2)) {
      const seen = newest2 === null ? "none" : since(newest2, publishMs);
      return verdict(
        false,
        `machine ${machine3.id} has crashed repeatedly since the publish and is still ` +
          `restarting (newest crash at ${since(newest3, publishMs)}, look 2 had seen ${seen})`,
        machine3.id,
        "crashes-since-publish",
      );
    }
  }
  return verdict(
    true,
    "no crash newer than look 2's newest appeared by look 3: the machines stay up",
    null,
    "crashes-since-publish",
  );
}

// --- the protocol loop ---------------------------------------------------------------------

function options(request) {
  const given = request.options || {};
  // The defaults of checks/layered.py LayeredCheck; the testbed sends the scenario's timing.
  return {
    look_delay_s: given.look_delay_s ?? 5.0,
    start_timeout_s: given.start_timeout_s ?? 60.0,
    poll_s: given.poll_s ?? 1.0,
  };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  if (request.protocol !== PROTOCOL) {
    // Anything on stderr is quoted in the testbed's error message.
    console.error(`timestamp.js speaks protocol ${PROTOCOL}, got ${JSON.stringify(request.protocol)}`);
    process.exit(2);
  }
  const answer = next(options(request), request.publish_started_ms, request.looks);
  process.stdout.write(JSON.stringify(answer) + "\n");
});
// EOF on stdin: the testbed is done with this process.
lines.on("close", () => process.exit(0));
