"""Reports: tables, plots, HTML, statistical power and the leaderboard's queries."""
