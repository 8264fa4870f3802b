// A rolling deploy written with npm's fly-admin (1.6.1), as its README shows the calls:
// update each machine to FLY_IMAGE_REF (Machine.updateMachine), wait for that version to
// start (Machine.waitMachine), look at every machine's events (Machine.listEvents) twice
// LOOK_DELAY_S apart (default 10), and fail if a machine is not started at the second look
// or shows a crash (an exit not asked for, non-zero or OOM-killed) newer than the newest the
// first look showed: the timestamp rule. On a failure every machine is updated back to the
// image it ran. Exit 0: live; 1: failed (rolled back); 2: an API error.
//
//   FLY_API_HOSTNAME (the base URL) FLY_API_TOKEN FLY_APP_NAME FLY_IMAGE_REF [LOOK_DELAY_S]
//   NODE_PATH must reach fly-admin (make installs it under tests/js/node_modules).
'use strict';
const { createClient } = require('fly-admin');

const app_name = process.env.FLY_APP_NAME;
const image = process.env.FLY_IMAGE_REF;
const delayMs = 1000 * Number(process.env.LOOK_DELAY_S || '10');
const fly = createClient(process.env.FLY_API_TOKEN);
fly.apiUrl = process.env.FLY_API_HOSTNAME; // the client's base URL (its default: api.machines.dev)
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

function newestCrash(events) {
  const crashes = events
    .filter((e) => e.type === 'exit' && e.request && e.request.exit_event)
    .filter((e) => !e.request.exit_event.requested_stop
      && (e.request.exit_event.exit_code || e.request.exit_event.oom_killed))
    .map((e) => e.timestamp);
  return crashes.length ? Math.max(...crashes) : 0;
}

async function look(ids) {
  return Promise.all(ids.map(async (machine_id) => ({
    state: (await fly.Machine.getMachine({ app_name, machine_id })).state,
    crash: newestCrash(await fly.Machine.listEvents({ app_name, machine_id })),
  })));
}

async function updateAll(ids, to) {
  for (const machine_id of ids) {
    const machine = await fly.Machine.updateMachine({ app_name, machine_id, config: { image: to } });
    try {
      await fly.Machine.waitMachine({ app_name, machine_id, state: 'started',
                                      instance_id: machine.instance_id, timeout: '60s' });
    } catch (error) {
      console.error(`machine ${machine_id} did not reach started: ${error.message}`);
    }
  }
}

async function main() {
  const machines = await fly.Machine.listMachines(app_name);
  const ids = machines.map((m) => m.id);
  const previous = machines.map((m) => m.config && m.config.image).find(Boolean);
  await updateAll(ids, image);
  const first = await look(ids);
  await sleep(delayMs);
  const second = await look(ids);
  let why = null;
  if (second.some((m) => m.state !== 'started')) why = 'a machine is not started at the second look';
  else if (second.some((m, i) => m.crash > first[i].crash)) why = "a crash newer than the first look's";
  if (why === null) {
    console.log("fly-admin: no crash newer than the first look's (live)");
    return 0;
  }
  console.log(`fly-admin: ${why} (failed)`);
  if (previous && previous !== image) {
    console.error(`rolling back to ${previous}`);
    await updateAll(ids, previous);
  }
  return 1;
}

main().then((code) => process.exit(code), (error) => {
  console.error(`fly-admin: the API refused a call: ${error.message}`);
  process.exit(2);
});
