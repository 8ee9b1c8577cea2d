-- wrk script: each connection waits DELAY_MS between its requests, so that C connections make
-- about C * 1000 / DELAY_MS requests a second (scripts/bench-unknown-key-flood --flood-rate).
-- Usage: wrk -s bench/wrk/paced.lua URL -- DELAY_MS
local pause = 0

function init(args)
  pause = tonumber(args[1]) or 0
end

function delay()
  return pause
end
