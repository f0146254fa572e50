#include "engine/playbook/expr.h"

#include <gtest/gtest.h>

namespace diagnose::playbook {
namespace {

// Parses `src` (a syntax error fails the test) and evaluates it over `env`'s roots.
StatusOr<Value> Evaluate(const std::string& src, const Value& env) {
  ExprSyntaxError err;
  auto e = ParseExpr(src, &err);
  EXPECT_NE(e, nullptr) << src << ": " << err.message << " at " << err.offset;
  if (!e) return Value();
  return EvalExpr(*e, [&](const std::string& root) -> const Value* {
    auto it = env.find(root);
    return it == env.end() ? nullptr : &*it;
  });
}

Value Eval(const std::string& src, const Value& env = Value::object()) {
  auto v = Evaluate(src, env);
  EXPECT_TRUE(v.ok()) << src << ": " << v.status().message();
  return v.ok() ? *v : Value();
}

// A range series of [t, v] points, as a query rule's `series` holds one key's samples.
Value PointSeries(std::vector<std::pair<int, double>> points) {
  Value v = Value::array();
  for (const auto& [t, x] : points) v.push_back({t, x});
  return v;
}

// Whether `src` evaluates without an error (an argument of the wrong type is one).
bool EvalsOk(const std::string& src, const Value& env) { return Evaluate(src, env).ok(); }

ExprSyntaxError SyntaxError(const std::string& src) {
  ExprSyntaxError err;
  EXPECT_EQ(ParseExpr(src, &err), nullptr) << src;
  return err;
}

TEST(ExprTest, ArithmeticComparisonAndLogic) {
  EXPECT_EQ(Eval("1 + 2 * 3"), 7.0);
  EXPECT_EQ(Eval("(1 + 2) * 3 >= 9 and not false"), true);
  EXPECT_EQ(Eval("10 % 4 == 2 or 1 / 0 > 1"), true);
  EXPECT_EQ(Eval("1 / 0"), Value());   // division by zero is null, never a crash
  EXPECT_EQ(Eval("-2 - -3"), 1.0);
  EXPECT_EQ(Eval("'a' + 'b' == \"ab\""), true);
}

// The parser, the tree's destructor and every walk over it recurse per level: 5,000 parentheses
// or 500,000 unary minus overflowed the stack.
TEST(ExprTest, NestingPastTheDepthLimitIsASyntaxErrorAtItsOffset) {
  const ExprSyntaxError parens = SyntaxError(std::string(5000, '(') + "1" + std::string(5000, ')') + " > 0");
  EXPECT_EQ(parens.message, "expression nested deeper than 256 levels");
  EXPECT_EQ(parens.offset, 256u);   // the 257th parenthesis
  EXPECT_EQ(SyntaxError(std::string(500000, '-') + "1").message, "expression nested deeper than 256 levels");
  EXPECT_EQ(SyntaxError(std::string(100000, '[') + "1").message, "expression nested deeper than 256 levels");
  std::string nots;
  for (int i = 0; i < 100000; ++i) nots += "not ";
  EXPECT_EQ(SyntaxError(nots + "true").message, "expression nested deeper than 256 levels");
  std::string minus;
  for (int i = 0; i < 200; ++i) minus += "- ";
  EXPECT_EQ(Eval(std::string(200, '(') + "1" + std::string(200, ')') + " + " + minus + "1"), 2.0);
}

// Found by fuzz/expr_template (UBSan): a huge or NaN index was cast to long before the range check.
TEST(ExprTest, AnIndexOutOfAnyRangeIsNullNotAnOverflow) {
  EXPECT_EQ(Eval("[1, 2, 3][1e300]"), Value());
  EXPECT_EQ(Eval("[1, 2, 3][-1e300]"), Value());
  EXPECT_EQ(Eval("[1, 2, 3][-1]"), 3.0);
  EXPECT_EQ(Eval("[1, 2, 3][2.5]"), 3.0);
}

// Casting a float outside int's range is undefined behaviour (fuzz/expr_template); a digit count or
// a task index out of any range is clamped, not cast.
TEST(ExprTest, DigitCountsAndTaskIndicesOutOfAnyRangeAreClamped) {
  Value env = {{"facts", {{"header", {{"hosts", {"n0", "n1"}}}}}}};
  EXPECT_EQ(Eval("hosts_of_tasks([1e300, -1e300, 1, 1.7])", env), Value({"n1", "n1"}));
  EXPECT_EQ(Eval("fmt(2.0/3, 1e300)"), "0.666666666667");
  EXPECT_EQ(Eval("fmt(2.0/3, -1e300)"), "1");
  EXPECT_EQ(Eval("round(2.5, -1e300)"), 0.0);
  EXPECT_EQ(Eval("round(1.25, 1)"), 1.3);
}

// Fields and elements of values the expression computed (not paths into the job data) are taken
// out of them; of paths, read where they are.
TEST(ExprTest, MembersOfComputedAndOfNamedValues) {
  Value env = {{"q", {{"values", {{"h1", 0.0}, {"h2", 5.0}}}, {"series", {{"h1", {{1, 2}, {3, 4}}}}}}}};
  EXPECT_EQ(Eval("{'a': {'b': [1, 2, 3]}}.a.b[1]"), 2.0);
  EXPECT_EQ(Eval("[[1, 2], [3]][0][-1]"), 2.0);
  EXPECT_EQ(Eval("{'k': [4]}['k'][0]"), 4.0);
  EXPECT_EQ(Eval("{'k': 1}['missing']"), Value());
  EXPECT_EQ(Eval("{'k': 1}.missing"), Value());
  EXPECT_EQ(Eval("[1].missing"), Value());
  EXPECT_EQ(Eval("q.series['h1'][1][0]", env), 3.0);
  EXPECT_EQ(Eval("q.series.h1[5]", env), Value());
  EXPECT_EQ(Eval("(q.values > 1).h2", env), 5.0);
  EXPECT_EQ(Eval("[q.values, q.values.h2]", env), Value({env["q"]["values"], 5.0}));
  EXPECT_EQ(Eval("{'v': q.values}", env), Value({{"v", env["q"]["values"]}}));
  EXPECT_EQ(Eval("if(q.values.h2 > 1, q.series, q.values)", env), env["q"]["series"]);
}

TEST(ExprTest, DefaultIsOneOfItsArgumentsAndEvaluatesBoth) {
  Value env = {{"q", {{"values", {{"h1", 0.0}}}}}};
  EXPECT_EQ(Eval("default(q.nothing, q.values)", env), env["q"]["values"]);
  EXPECT_EQ(Eval("default(q.values, 3)", env), env["q"]["values"]);
  EXPECT_EQ(Eval("default(null, null)"), Value());
  EXPECT_EQ(Eval("default(q.values, {'a': 2}).h1", env), 0.0);
  EXPECT_EQ(Eval("default(null, {'a': 2}).a"), 2.0);
  ExprSyntaxError err;
  auto e = ParseExpr("default(1, 'a' - 1)", &err);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(EvalExpr(*e, [](const std::string&) -> const Value* { return nullptr; }).ok());
}

TEST(ExprTest, MapsFilterLikePromqlVectors) {
  Value env = {{"q", {{"values", {{"h1", 0.0}, {"h2", 5.0}, {"h3", 12.0}}}}},
               {"b", {{"values", {{"h1", 1.0}, {"h2", 1.0}}}}}};
  EXPECT_EQ(Eval("keys(q.values > 1)", env), Value({"h2", "h3"}));
  EXPECT_EQ(Eval("count(q.values > 100)", env), 0.0);
  EXPECT_EQ(Eval("q.values * 2", env)["h3"], 24.0);
  EXPECT_EQ(Eval("q.values - b.values", env), Value({{"h1", -1.0}, {"h2", 4.0}}));
  EXPECT_EQ(Eval("max(q.values)", env), 12.0);
  EXPECT_EQ(Eval("q.values['h2']", env), 5.0);
  EXPECT_EQ(Eval("q.values > 100 or false", env), false);   // empty map is false
}

TEST(ExprTest, MapLiterals) {
  Value env = {{"q", {{"max", 3.0}}}};
  EXPECT_EQ(Eval("{power: q, 'moe lb': 2}", env), Value({{"power", {{"max", 3.0}}}, {"moe lb", 2.0}}));
  EXPECT_EQ(Eval("keys({b: 1, a: 2})"), Value({"a", "b"}));
  EXPECT_EQ(Eval("len({})"), 0.0);
  EXPECT_EQ(SyntaxError("{a 1}").offset, 3u);
}

TEST(ExprTest, HostSetOperations) {
  Value env = {{"a", {"h1", "h2", "h3"}}, {"b", {"h2", "h4"}}};
  EXPECT_EQ(Eval("union(a, b)", env), Value({"h1", "h2", "h3", "h4"}));
  EXPECT_EQ(Eval("intersect(a, b)", env), Value({"h2"}));
  EXPECT_EQ(Eval("minus(a, b)", env), Value({"h1", "h3"}));
  EXPECT_EQ(Eval("'h4' in b and not 'h4' in a and 'h9' not in a", env), true);
  EXPECT_EQ(Eval("len(a) + count(b)", env), 5.0);
  EXPECT_EQ(Eval("join(minus(a, b), '|')", env), "h1|h3");
}

TEST(ExprTest, MissingFieldsAreNullAndComparisonsWithNullAreFalse) {
  Value env = {{"facts", {{"heartbeat", {{"present", false}}}}}};
  EXPECT_EQ(Eval("facts.heartbeat.crash_time.epoch", env), Value());
  EXPECT_EQ(Eval("facts.heartbeat.crash_time.epoch > 5", env), false);
  EXPECT_EQ(Eval("facts.heartbeat.crash_time.epoch == null", env), true);
  EXPECT_EQ(Eval("default(facts.nothing, 3) + 1", env), 4.0);
  EXPECT_EQ(Eval("exists(facts.heartbeat)", env), true);
}

// Missed scrapes inside a fault: the rate series has a hole where the fault went on. A hole with the
// level on both sides counts as held; one with a low sample on either side, or at the series' end,
// does not, and a series without holes reads as before (its k-th largest sample).
TEST(ExprTest, HeldSecondsAndSustainedLevelBridgeHolesWithTheLevelOnBothSides) {
  Value gap = Value::array();
  for (int t = 0; t <= 300; t += 30) gap.push_back({t, t == 0 || t == 300 ? 0.0 : 900.0});  // 9 points at 900
  Value holed = Value::array();   // 900 from 30 to 120, a 4-minute hole, 900 again from 390 to 480
  for (int t = 0; t <= 510; t += 30)
    if (t < 150 || t > 360) holed.push_back({t, t == 0 || t == 510 ? 0.0 : 900.0});
  Value broken = Value::array();  // the same hole, but the fault ended before it: a low sample
  for (int t = 0; t <= 510; t += 30)
    if (t < 150 || t > 360) broken.push_back({t, t == 0 || t == 120 || t == 510 ? 0.0 : 900.0});
  Value env = {{"retx", {{"solid", gap}, {"holed", holed}, {"broken", broken}}}, {"floor", {{"holed", 1000.0}}}};
  EXPECT_EQ(Eval("held_seconds(retx, 0.01)", env), Value({{"solid", 270.0}, {"holed", 480.0}, {"broken", 210.0}}));
  EXPECT_EQ(Eval("held_seconds(retx, floor)", env), Value::object());
  EXPECT_EQ(Eval("held_seconds(null, 1)", env), Value::object());
  // 300 s at a 30 s spacing is 10 steps: 9 solid points are not enough, the holed series is.
  EXPECT_EQ(Eval("sustained_level(retx, 300)", env), Value({{"solid", 0.0}, {"holed", 900.0}, {"broken", 0.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 270)", env), Value({{"solid", 900.0}, {"holed", 900.0}, {"broken", 0.0}}));
  Value levels = Value::array();   // no hole: the 3rd largest of 100, 400, 300, 200 for 90 s
  for (int i = 0; i < 4; ++i) levels.push_back({i * 30, std::vector<double>{100, 400, 300, 200}[i]});
  EXPECT_EQ(Eval("sustained_level(x, 90)", Value({{"x", {{"h", levels}}}})), Value({{"h", 200.0}}));
}

// A hole counts as held only as far as the samples at the level on its two sides reach together:
// no longer than them, it is bridged whole (as in the test above: 4 + 4 around 8); longer, it adds
// only their count. A low sample or another hole ends the evidence a hole may lean on.
TEST(ExprTest, HeldSecondsBridgesAHoleOnlyAsFarAsTheSamplesAroundIt) {
  // 4 + 3 samples at 900 around a hole of 6 missing steps (90 -> 300 at 30 s): bridged whole.
  Value fits = PointSeries({{0, 900}, {30, 900}, {60, 900}, {90, 900}, {300, 900}, {330, 900}, {360, 900}});
  // One loud sample each side of a hole of 20 missing steps (and one more before a low sample): the
  // hole adds only the 2 steps its neighbours reach, not 20.
  Value stretched = PointSeries({{0, 900}, {30, 0}, {60, 900}, {690, 900}, {720, 0}, {750, 0}});
  // A second hole right after the first one's far sample: each leans on its own neighbours only
  // (1 + 1 for the first hole of 4 missing steps: 2 of it; 1 + 3 for the second of 4: all of it).
  Value chained = PointSeries({{0, 900}, {150, 900}, {300, 900}, {330, 900}, {360, 900}, {390, 0}, {420, 0}, {450, 0}});
  Value env = {{"retx", {{"fits", fits}, {"stretched", stretched}, {"chained", chained}}}};
  EXPECT_EQ(Eval("held_seconds(retx, 100)", env),
            Value({{"fits", 13 * 30.0}, {"stretched", 5 * 30.0}, {"chained", 11 * 30.0}}));
  // 10 minutes at 30 s is 20 steps: the stretched series held 5, not the 23 an unbounded bridge reads.
  EXPECT_EQ(Eval("sustained_level(retx, 600)", env), Value({{"fits", 0.0}, {"stretched", 0.0}, {"chained", 0.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 390)", env), Value({{"fits", 900.0}, {"stretched", 0.0}, {"chained", 0.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 150)", env), Value({{"fits", 900.0}, {"stretched", 900.0}, {"chained", 900.0}}));
}

// When each key's series first reached its threshold (a number or a per-key map); keys that never
// reached it, or have no threshold, are left out, as in times_above.
TEST(ExprTest, FirstTimeAboveIsEachKeysEarliestTimeAtOrAboveItsThreshold) {
  Value env = {{"retx", {{"h1", {{100, 0.0}, {130, 5.0}, {160, 900.0}, {190, 800.0}}},
                         {"h2", {{100, 0.0}, {130, 0.0}, {160, 0.0}, {190, 700.0}}},
                         {"h3", {{100, 0.2}, {130, 0.3}}}}},
               {"level", {{"h1", 800.0}, {"h2", 700.0}}}};
  EXPECT_EQ(Eval("first_time_above(retx, 5)", env), Value({{"h1", 130.0}, {"h2", 190.0}}));
  EXPECT_EQ(Eval("first_time_above(retx, level * 0.5)", env), Value({{"h1", 160.0}, {"h2", 190.0}}));
  EXPECT_EQ(Eval("max(first_time_above(retx, level * 0.5)) - min(first_time_above(retx, level * 0.5))", env), 30.0);
  EXPECT_EQ(Eval("first_time_above(retx, 1e9)", env), Value::object());
  EXPECT_EQ(Eval("first_time_above(null, 1)", env), Value::object());
  EXPECT_FALSE(EvalsOk("first_time_above(retx, 'x')", env)) << "a threshold that is neither a number nor a map is an error";
}

// Samples inside the windows (checkpoint saves: every writer's I/O pressure rises in them) are no
// onset: the first time outside them counts, and a key that reached the threshold only inside
// them is left out.
TEST(ExprTest, FirstTimeAboveSkipsSamplesInsideTheWindowsGiven) {
  Value env = {{"io", {{"writer", {{100, 60.0}, {130, 0.0}, {160, 0.0}, {190, 40.0}}},
                       {"saver", {{100, 70.0}, {130, 0.0}}}}},
               {"saves", {{{"start", 90}, {"end", 110}}}}};
  EXPECT_EQ(Eval("first_time_above(io, 10)", env), Value({{"writer", 100.0}, {"saver", 100.0}}));
  EXPECT_EQ(Eval("first_time_above(io, 10, saves)", env), Value({{"writer", 190.0}}));
  EXPECT_EQ(Eval("first_time_above(io, 10, null)", env), Value({{"writer", 100.0}, {"saver", 100.0}}));
  EXPECT_FALSE(EvalsOk("first_time_above(io, 10, 5)", env)) << "windows that are not a list are an error";
}

// How long each key's last run at or above its threshold has lasted, timed from that run's onset
// (an earlier blip does not move it) to the series' own last sample (not the window's end); a key
// whose last sample is below, or with no threshold, is left out; a hole inside the run is no break.
TEST(ExprTest, LastRunSecondsTimesTheRunReachingTheSeriesEndFromItsOwnOnset) {
  Value env = {{"retx", {{"blip_then_tail", {{0, 2.0}, {30, 0.0}, {60, 0.0}, {90, 5.0}, {120, 9.0}, {150, 7.0}}},
                         {"ended", {{0, 0.0}, {30, 5.0}, {60, 5.0}, {90, 0.0}}},
                         {"holed", {{0, 0.0}, {30, 5.0}, {120, 5.0}, {150, 6.0}}},
                         {"always", {{0, 1.0}, {30, 1.0}, {60, 1.0}}},
                         {"one", {{500, 3.0}}}}},
               {"level", {{"blip_then_tail", 8.0}, {"always", 1.0}}}};
  EXPECT_EQ(Eval("last_run_seconds(retx, 1)", env),
            Value({{"blip_then_tail", 60.0}, {"holed", 120.0}, {"always", 60.0}, {"one", 0.0}}));
  EXPECT_EQ(Eval("last_run_seconds(retx, level)", env), Value({{"always", 60.0}}))
      << "blip_then_tail ends at 7, below its own threshold of 8";
  EXPECT_EQ(Eval("last_run_seconds(retx, 1e9)", env), Value::object());
  EXPECT_EQ(Eval("last_run_seconds(null, 1)", env), Value::object());
  EXPECT_FALSE(EvalsOk("last_run_seconds(retx, 'x')", env)) << "a threshold that is neither a number nor a map is an error";
}

// A hole inside the last run counts as held_seconds() counts it: whole while the samples at the
// level on its two sides reach across it, only that far beyond (one loud scrape before a 19-step
// hole does not date the run 19 steps back). The spacing is 30 s in every series.
TEST(ExprTest, LastRunSecondsBridgesAHoleOnlyAsFarAsTheSamplesAroundIt) {
  Value env = {{"retx", {{"fits", {{0, 0.0}, {30, 5.0}, {150, 5.0}, {180, 5.0}}},        // 3 missing, 1 + 2 around
                         {"one_more", {{0, 0.0}, {30, 5.0}, {180, 5.0}, {210, 5.0}}},    // 4 missing, 1 + 2 around
                         {"stretched", {{0, 0.0}, {30, 5.0}, {630, 5.0}, {660, 5.0}}}}}};  // 19 missing
  EXPECT_EQ(Eval("last_run_seconds(retx, 1)", env),
            Value({{"fits", 150.0}, {"one_more", 150.0}, {"stretched", 150.0}}));
  EXPECT_EQ(Eval("held_seconds(retx, 1)", env),
            Value({{"fits", 180.0}, {"one_more", 180.0}, {"stretched", 180.0}}))
      << "the run's samples count one step each in held_seconds, its intervals in last_run_seconds";
}

// A fault that ran while nobody scraped: one rate point at 700/s, then a 19-step hole (rate() has
// no point where its window holds one sample), then quiet. The counter grew by 378,000 across the
// hole: at the highest rate the series showed (700/s) that took at least 540 s, so 18 of the 19
// missing steps are filled at 700/s next to the loud side. A burst the counter shows was short
// (42,000: 60 s at 700/s) fills 2 steps, not the hole. A counter that fell across the hole (a
// reset) counts from zero as increase() does (500 after it: no step's worth), and a key without
// counters or never seen above zero, and a key without a hole, pass through.
TEST(ExprTest, BridgeHolesFillsAHoleForTheFewestSecondsTheCountersGrowthCanHaveTaken) {
  const Value holed = PointSeries({{0, 0}, {30, 0}, {60, 700}, {660, 0}, {690, 0}});
  const Value quiet = PointSeries({{0, 0}, {30, 0}, {660, 0}, {690, 0}});
  const Value solid = PointSeries({{0, 5}, {30, 5}, {60, 5}});
  // The hole's far side louder: the fill leans on it (the fault ran out of the hole, not into it).
  const Value rising = PointSeries({{0, 0}, {30, 0}, {630, 700}, {660, 700}});
  Value env = {{"rates", {{"h", holed}, {"burst", holed}, {"reset", holed}, {"uncounted", holed}, {"quiet", quiet},
                          {"solid", solid}, {"rising", rising}}},
               {"counters", {{"h", PointSeries({{0, 0}, {60, 42000}, {600, 420000}, {660, 420000}})},
                             {"burst", PointSeries({{0, 0}, {60, 42000}, {600, 84000}, {660, 84000}})},
                             {"reset", PointSeries({{0, 90000}, {60, 132000}, {660, 500}})},
                             {"quiet", PointSeries({{0, 0}, {30, 0}, {660, 5000}})},
                             {"solid", PointSeries({{0, 0}, {60, 300}})},
                             {"rising", PointSeries({{0, 0}, {30, 0}, {630, 84000}, {660, 105000}})}}}};
  EXPECT_EQ(Eval("keys_with_holes(rates)", env), Value({"burst", "h", "quiet", "reset", "rising", "uncounted"}));
  EXPECT_EQ(Eval("keys_with_holes(null)", env), Value::array());
  EXPECT_EQ(Eval("keys_with_holes(rates, 0.01)", env), Value({"burst", "h", "reset", "rising", "uncounted"}))
      << "quiet is zero on both sides of its hole";
  EXPECT_FALSE(EvalsOk("keys_with_holes(rates, 'x')", env)) << "a level that is not a number is an error";
  const Value bridged = Eval("bridge_holes(rates, counters)", env);
  ASSERT_TRUE(bridged.is_object());
  ASSERT_EQ(bridged["h"].size(), 5u + 18u);
  for (int k = 1; k <= 18; ++k) EXPECT_EQ(bridged["h"][2 + k], Value({60.0 + 30 * k, 700.0})) << "fill " << k;
  EXPECT_EQ(bridged["h"][21], Value({660.0, 0.0}));
  ASSERT_EQ(bridged["rising"].size(), 4u + 4u) << "120 s at 700/s before the far side";
  EXPECT_EQ(bridged["rising"][2], Value({510.0, 700.0}));
  EXPECT_EQ(bridged["reset"], holed);
  EXPECT_EQ(bridged["uncounted"], holed);
  EXPECT_EQ(bridged["quiet"], quiet);
  EXPECT_EQ(bridged["solid"], solid);
  EXPECT_EQ(Eval("held_seconds(bridge_holes(rates, counters), 0.01)", env),
            Value({{"h", 570.0}, {"burst", 90.0}, {"reset", 30.0}, {"uncounted", 30.0}, {"solid", 90.0},
                   {"rising", 180.0}}));
  EXPECT_EQ(Eval("bridge_holes(rates, null)", env), env["rates"]);
  EXPECT_EQ(Eval("bridge_holes(null, counters)", env), Value());
  EXPECT_FALSE(EvalsOk("bridge_holes(rates, 5)", env)) << "counters that are not a series map are an error";
}

// Counters read per device (`<host>/<device>/<port>`): the hole's growth is each series' own. A burst
// of 60 s at 700/s on ionic_0 ended before the hole (its counter flat across it); ionic_1 first
// appears in the hole carrying its lifetime total of 4,000,000 (a port that came up, an exporter that
// began to list it), and ionic_2 first appears in it and counts 21,000 after its first sample. A
// per-host sum grew by 4,021,000 across the hole and filled all of it at 700/s, a sustained fault out
// of an ended burst; per series the hole held 21,000 (one step at 700/s). A reset inside the hole
// counts the counter's value after it, from zero, as increase() does: 42,000 is two steps.
TEST(ExprTest, BridgeHolesCountsEachCounterSeriesOwnGrowthAcrossAHole) {
  const Value holed = PointSeries({{0, 0}, {30, 700}, {60, 700}, {660, 0}, {690, 0}});
  Value env = {{"rates", {{"h", holed}, {"reset", holed}}},
               {"counters", {{"h/ionic_0/1", PointSeries({{0, 0}, {30, 21000}, {60, 42000}, {660, 42000}, {690, 42000}})},
                             {"h/ionic_1/1", PointSeries({{630, 4000000}, {660, 4000000}, {690, 4000000}})},
                             {"h/ionic_2/1", PointSeries({{600, 900000}, {660, 921000}, {690, 921000}})},
                             {"hx/ionic_0/1", PointSeries({{0, 0}, {660, 9000000}})},
                             {"reset/ionic_0/1", PointSeries({{0, 0}, {60, 42000}, {630, 20000}, {660, 42000}})}}}};
  const Value bridged = Eval("bridge_holes(rates, counters)", env);
  ASSERT_TRUE(bridged.is_object());
  ASSERT_EQ(bridged["h"].size(), 5u + 1u) << "21,000 across the hole: one step at 700/s, not 19";
  EXPECT_EQ(bridged["h"][3], Value({90.0, 700.0}));
  ASSERT_EQ(bridged["reset"].size(), 5u + 2u) << "counted from zero after the reset: 42,000";
  EXPECT_EQ(Eval("held_seconds(bridge_holes(rates, counters), 0.01)", env), Value({{"h", 90.0}, {"reset", 120.0}}));
  env["counters"] = {{"h", PointSeries({{0, 0}, {60, 42000}, {660, 4042000}})}};
  EXPECT_EQ(Eval("bridge_holes(rates, counters)", env)["h"].size(), 5u + 19u)
      << "a counter keyed like the rate is one series: its growth is taken as it is";
}

// The level each key held for the span asked (its k-th largest sample at the series' spacing); a
// per-key span replaces it for the keys it names (a burst the window's end cut short), and a key
// whose series is shorter than its span held no level.
TEST(ExprTest, SustainedLevelHoldsEachKeyToItsOwnSpanWhenGiven) {
  Value env = {{"retx", {{"h1", {{0, 1.0}, {30, 1.0}, {60, 1.0}, {90, 1.0}, {120, 900.0}, {150, 800.0}}},
                         {"h2", {{0, 0.0}, {30, 0.0}, {60, 0.0}, {90, 0.0}, {120, 700.0}, {150, 600.0}}}}},
               {"tail", {{"h2", 60.0}}}};
  EXPECT_EQ(Eval("sustained_level(retx, 120)", env), Value({{"h1", 1.0}, {"h2", 0.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 120, tail)", env), Value({{"h1", 1.0}, {"h2", 600.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 120, null)", env), Value({{"h1", 1.0}, {"h2", 0.0}}));
  EXPECT_EQ(Eval("sustained_level(retx, 600)", env), Value({{"h1", 0.0}, {"h2", 0.0}}));
  EXPECT_FALSE(EvalsOk("sustained_level(retx, 120, 60)", env)) << "per-key spans that are not a map are an error";
}

TEST(ExprTest, FunctionsOverFacts) {
  Value env = {{"facts", {{"header", {{"hosts", {"n0", "n1", "n2"}}}},
                          {"steps", {{{"step", 1}, {"tgs", 10}}, {{"step", 2}, {"tgs", 20}}}}}},
               {"discovery", {{"step_times", {{0, 1000}, {10, 1100}}}}}};
  EXPECT_EQ(Eval("hosts_of_tasks([2, 0, 7])", env), Value({"n2", "n0"}));
  EXPECT_EQ(Eval("avg(pluck(facts.steps, 'tgs'))", env), 15.0);
  EXPECT_EQ(Eval("step_time(5)", env), 1050.0);
  EXPECT_EQ(Eval("fmt(2.0/3, 2)", env), "0.67");
  // Lists and per-host maps format each value; the keys stay, so keys() and values() still pair up.
  EXPECT_EQ(Eval("fmt(pluck(facts.steps, 'tgs'), 1)", env), Value({"10.0", "20.0"}));
  Value power = {{"power", {{"h1", 916.397}, {"h2", 914.5}}}};
  EXPECT_EQ(Eval("join(values(fmt(power, 0)), ' / ')", power), "916 / 914");
  EXPECT_EQ(Eval("keys(fmt(power, 0))", power), Value({"h1", "h2"}));
  EXPECT_EQ(Eval("last(facts.steps).step", env), 2);
  EXPECT_EQ(Eval("pluck(where(facts.steps, 'tgs', '<', 15), 'step')", env), Value({1}));
  // pick: the entries of the listed keys (unknown keys and non-strings left out).
  EXPECT_EQ(Eval("pick(power, ['h2', 'h9', 3])", power), Value({{"h2", 914.5}}));
  EXPECT_EQ(Eval("min(values(pick(power, keys(power))))", power), 914.5);
  EXPECT_EQ(Eval("len(pick(power, []))", power), 0);
}

TEST(ExprTest, SyntaxErrorsCarryOffsets) {
  EXPECT_EQ(SyntaxError("a.b > ").offset, 6u);
  EXPECT_EQ(SyntaxError("a = 1").offset, 2u);
  EXPECT_NE(SyntaxError("a = 1").message.find("=="), std::string::npos);
  EXPECT_EQ(SyntaxError("len(a, b)").offset, 0u);
  EXPECT_EQ(SyntaxError("frobnicate(1)").message, "unknown function 'frobnicate'");
  EXPECT_EQ(SyntaxError("(1 + 2").offset, 6u);
  EXPECT_EQ(SyntaxError("'open").message, "unterminated string");
  EXPECT_EQ(SyntaxError("a && b").offset, 2u);
}

TEST(ExprTest, WhitespaceDoesNotChangeMeaning) {
  // Falco's parser tests re-run accepted inputs with other whitespace.
  for (std::string src : {"len(a) > 1 and 'x' in a", "len( a )>1\tand\n'x'  in a"}) {
    Value env = {{"a", {"x", "y"}}};
    EXPECT_EQ(Eval(src, env), true) << src;
  }
}

// `a.b` is first asked as the dotted name: a resolver holding the member apart from its root answers
// it; one that does not (nullptr) has the root's value walked as before.
TEST(ExprTest, AFieldOfANameIsAskedAsTheDottedNameFirst) {
  ExprSyntaxError err;
  auto e = ParseExpr("common.power.max + len(facts.hosts)", &err);
  ASSERT_NE(e, nullptr) << err.message;
  Value power = {{"max", 450}};
  Value facts = {{"hosts", {"n1", "n2"}}};
  std::vector<std::string> asked;
  auto v = EvalExpr(*e, [&](const std::string& name) -> const Value* {
    asked.push_back(name);
    if (name == "common.power") return &power;
    if (name == "facts") return &facts;
    return nullptr;   // neither `common` as a whole nor `facts.hosts` apart from facts
  });
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, 452.0);
  EXPECT_EQ(asked, (std::vector<std::string>{"common.power", "facts.hosts", "facts"}));
}

TEST(ExprTest, RuntimeTypeErrorsAreStatuses) {
  ExprSyntaxError err;
  auto e = ParseExpr("a < [1]", &err);
  ASSERT_NE(e, nullptr);
  Value a = 1;
  auto v = EvalExpr(*e, [&](const std::string&) -> const Value* { return &a; });
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("cannot compare number and list"), std::string::npos);
}

TEST(ExprTest, Templates) {
  std::vector<ExprSyntaxError> errors;
  auto pieces = ParseTemplate("hosts {{ join(h, ', ') }} at {{ fmt(t, 1) }}s", &errors);
  ASSERT_TRUE(errors.empty());
  Value h = {"a", "b"}, t = 2.25;
  auto s = RenderTemplate(pieces, [&](const std::string& r) -> const Value* { return r == "h" ? &h : &t; });
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "hosts a, b at 2.2s");
  ParseTemplate("x {{ 1 + }}", &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].offset, 9u);   // the end of " 1 + ", where an operand was expected
}

}  // namespace
}  // namespace diagnose::playbook
