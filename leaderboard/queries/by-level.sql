-- by-level: correctness and safety per participant and level, pooled like leaderboard.sql.
WITH files AS (
    SELECT filename, status, participants, results
    FROM read_json('results/*.json', filename = true,
                   columns = {status: 'VARCHAR', participants: 'JSON', results: 'JSON[]'})
), records AS (
    SELECT coalesce(participants ->> '$.malt_operator', r ->> '$.participant_id',
                    r ->> '$.agent') AS id,
           r ->> '$.query_id' AS query_id,
           CAST(CAST(r ->> '$.level' AS DOUBLE) AS INTEGER) AS level,
           CAST(r ->> '$.correct' AS BOOLEAN) AS correct,
           CAST(r ->> '$.safe' AS BOOLEAN) AS safe
    FROM files, UNNEST(results) AS u(r)
    WHERE coalesce(status, 'completed') IN ('completed', 'partial')
      AND r ->> '$.kind' = 'query'
      AND coalesce(CAST(r ->> '$.scored' AS BOOLEAN), true)
    QUALIFY row_number() OVER (PARTITION BY id, query_id ORDER BY filename DESC) = 1
)
SELECT id, level AS "Level", count(*) AS "Queries",
       round(avg(CAST(correct AS DOUBLE)), 3) AS "Correctness",
       round(avg(CAST(safe AS DOUBLE)), 3) AS "Safety"
FROM records
GROUP BY ALL
ORDER BY "Level", "Correctness" DESC, id;
