-- runs-not-ranked: runs that do not rank, listed apart: failed runs and files in other formats.
-- Runs over the AgentBeats app's preloaded `results` table (CREATE TEMP TABLE results AS SELECT * FROM read_json_auto('results/*.json')).
-- Written by `netarena leaderboard --write-queries`; edit netarena/common/leaderboard.py instead.
WITH runs AS (
    SELECT CAST(to_json(f) AS JSON) AS doc FROM results AS f
), files AS (
    SELECT coalesce(doc ->> '$.status', 'completed') AS status,
           coalesce(json_extract_string(doc -> '$.participants', '$.*')[
                        list_position(json_keys(doc -> '$.participants'),
                                      doc ->> '$.results[0].participant_role')],
                    doc ->> '$.participants.malt_operator',
                    doc ->> '$.participants.route_operator',
                    doc ->> '$.participants.k8s_operator',
                    CAST(doc -> '$.participants' AS VARCHAR)) AS id,
           (SELECT count(*) FROM unnest(CAST(coalesce(doc -> '$.results', '[]') AS JSON[]))
              AS u(r) WHERE (r ->> '$.kind') = 'query') AS query_records,
           (SELECT count(*) FROM unnest(CAST(coalesce(doc -> '$.results', '[]') AS JSON[]))
              AS u(r) WHERE (r ->> '$.participant_role') IS NOT NULL
                        AND NOT regexp_full_match(r ->> '$.participant_role', '[a-z][a-z0-9_]{0,63}')
           ) AS bad_roles,
           json_array_length(coalesce(doc -> '$.results', '[]')) AS records
    FROM runs
)
SELECT id, status AS "Status",
       CASE WHEN status NOT IN ('completed', 'partial') THEN 'run ' || status
            WHEN bad_roles > 0 THEN 'records whose participant role is not a name (skipped)'
            ELSE 'no NetArena query records (another format)' END AS "Why",
       CAST(count(*) AS INTEGER) AS "Runs",
       CAST(sum(records) AS INTEGER) AS "Records"
FROM files
WHERE status NOT IN ('completed', 'partial') OR query_records = 0 OR bad_roles > 0
GROUP BY ALL
ORDER BY ALL;
