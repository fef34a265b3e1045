"""Tests of app-k8s."""
