"""The bilingual (Chinese/English) retrieval set of `python -m bench bilingual`.

Hand-written for this test, text by text, by one engineer: no generator, no templates, no
randomness, no machine translation. It reads as one agent's memories of one user (facts about
the user and the family, preferences, devices, accounts, health, travel, work incidents), the way a
user says them or an assistant notes them down, in Chinese or in English.

Four groups of questions, each naming exactly one gold memory (`Question.gold`):
- `zh`: a Chinese memory, a Chinese question that paraphrases it ("用户只使用安卓手机" ←
  "他用的是什么手机系统？");
- `en`: the same in English;
- `cross`: the memory in one language, the question in the other (half each way: `x01`–`x10` are
  Chinese memories asked in English, `x11`–`x20` English memories asked in Chinese);
- `multi`: a memory of two or three clauses, a question about one of them, in either language.

The questions paraphrase: they share as few exact words with their memory as reads naturally, so
that keyword matching alone does not solve the set. Hardness comes from near-topic memories:
the gold memories of one group sit next to others on the same subject (two allergies, two
incidents, two cities, two phones, across both languages), `DISTRACTORS` adds memories on the
questions' topics that no question asks about (another phone brand, another city, another
relative), and `UNRELATED` is 50 memories on other subjects. Every question has one right answer
in the whole set.
"""

from __future__ import annotations

from dataclasses import dataclass

GROUPS = ("zh", "en", "cross", "multi")


@dataclass(frozen=True)
class Memory:
    id: str
    text: str


@dataclass(frozen=True)
class Question:
    group: str  # one of GROUPS
    text: str
    gold: str  # the id of the one memory that answers it


ZH_MEMORIES = (
    Memory("zh01", "用户只使用安卓手机，不考虑苹果。"),
    Memory("zh02", "我对花生严重过敏，吃一点就会起疹子。"),
    Memory("zh03", "我女儿今年九月上小学一年级。"),
    Memory("zh04", "我每天早上六点半起床，先去江边跑五公里。"),
    Memory("zh05", "公司的报销单每月25号之前必须交给财务。"),
    Memory("zh06", "上周数据库主库磁盘写满了，订单服务宕机了两个小时。"),
    Memory("zh07", "用户喜欢喝不加糖的美式咖啡。"),
    Memory("zh08", "我老家在四川成都，春节一般回去陪爸妈。"),
    Memory("zh09", "我的招商银行信用卡每月8号还款。"),
    Memory("zh10", "用户的笔记本是 ThinkPad X1，装的 Ubuntu。"),
    Memory("zh11", "我不吃香菜，点外卖记得备注一下。"),
    Memory("zh12", "我父亲有高血压，每天早上要吃降压药。"),
    Memory("zh13", "我们组的周会改到每周四下午三点了。"),
    Memory("zh14", "明年五月我打算去京都看樱花之后的新绿。"),
    Memory("zh15", "我养了一只叫豆豆的橘猫，特别能吃。"),
    Memory("zh16", "我的驾照下个月就到期了，得抽空去车管所换证。"),
    Memory("zh17", "我妈不会用微信，有事要直接给她打电话。"),
    Memory("zh18", "我在学西班牙语，每周上两次网课。"),
    Memory("zh19", "测试环境的 Redis 密码上周刚换过，旧的已经不能用了。"),
    Memory("zh20", "晚上十一点以后别给我发工作消息，我不会看的。"),
    Memory("zh21", "我近视六百度，平时都戴隐形眼镜。"),
    Memory("zh22", "用户的儿子对鸡蛋过敏，蛋糕也不能吃。"),
    Memory("zh23", "我们家住在杭州西湖区，楼下就是一个大公园。"),
    Memory("zh24", "我给父母转账一般用微信，金额大了才走银行。"),
    Memory("zh25", "我哥在深圳做程序员，已经干了八年。"),
    Memory("zh26", "体检报告说我血糖偏高，医生让我少吃甜食。"),
    Memory("zh27", "我租的房子明年三月到期，到时候可能要搬家。"),
    Memory("zh28", "用户的生日是农历八月十五，正好赶上中秋。"),
    Memory("zh29", "上次发版因为配置文件写错了一个参数，只好回滚。"),
    Memory("zh30", "我爱看科幻小说，最喜欢刘慈欣的《三体》。"),
    Memory("zh31", "我每个月给爸妈打两千块生活费。"),
    Memory("zh32", "用户的微信号是 linwei_88，加好友请备注公司名称。"),
)

ZH_QUESTIONS = (
    Question("zh", "他用的是什么手机系统？", "zh01"),
    Question("zh", "有哪种坚果是我绝对不能碰的？", "zh02"),
    Question("zh", "他家闺女什么时候开始念书？", "zh03"),
    Question("zh", "他通常一大早做什么运动？", "zh04"),
    Question("zh", "费用报账的截止日期是哪天？", "zh05"),
    Question("zh", "之前下单功能好几个小时用不了，是因为什么？", "zh06"),
    Question("zh", "帮他买饮料的时候口味上要注意什么？", "zh07"),
    Question("zh", "他过年一般去哪儿？", "zh08"),
    Question("zh", "那张卡的账单哪天要还清？", "zh09"),
    Question("zh", "他平时工作用的是哪台电脑，什么操作系统？", "zh10"),
    Question("zh", "有什么调料是他不能接受的？", "zh11"),
    Question("zh", "家里长辈有什么慢性病？", "zh12"),
    Question("zh", "团队例会现在是什么时间开？", "zh13"),
    Question("zh", "他计划春末去哪里旅游？", "zh14"),
    Question("zh", "他家里的宠物叫什么名字？", "zh15"),
    Question("zh", "他有什么证件快过期了？", "zh16"),
    Question("zh", "想联系他母亲的话用什么方式最好？", "zh17"),
    Question("zh", "他最近在学哪门外语？", "zh18"),
    Question("zh", "缓存服务的登录凭证最近有没有变化？", "zh19"),
    Question("zh", "什么时候不要找他谈公事？", "zh20"),
    Question("zh", "他的视力怎么样，戴不戴眼镜？", "zh21"),
    Question("zh", "他家小孩有什么食物不能碰？", "zh22"),
    Question("zh", "他住在哪个城市哪个区？", "zh23"),
    Question("zh", "他平时怎么给家里人汇钱？", "zh24"),
    Question("zh", "他的兄弟在哪个城市上班，做什么的？", "zh25"),
    Question("zh", "医生最近给了他什么饮食上的建议？", "zh26"),
    Question("zh", "他的租约什么时候结束？", "zh27"),
    Question("zh", "他哪天过生日？", "zh28"),
    Question("zh", "之前那次上线失败是怎么回事？", "zh29"),
    Question("zh", "他喜欢读哪一类书？", "zh30"),
    Question("zh", "他每月会给家里老人多少钱？", "zh31"),
    Question("zh", "想加他的聊天账号，要注意什么？", "zh32"),
)

EN_MEMORIES = (
    Memory("en01", "My smartwatch is a Garmin Forerunner, I wear it even while sleeping."),
    Memory("en02", "I'm lactose intolerant, so no milk in my coffee please."),
    Memory("en03", "My son Leo plays the violin in the school orchestra."),
    Memory("en04", "I go swimming at the community pool on Tuesday and Thursday evenings."),
    Memory("en05", "Our on-call rotation switches every Monday at 9am."),
    Memory("en06", "Last night checkout timed out because the TLS certificate had expired."),
    Memory("en07", "On long flights I always want a window seat."),
    Memory("en08", "I grew up in Manchester but I've lived in Toronto for ten years now."),
    Memory("en09", "My GitHub username is tlin-dev."),
    Memory("en10", "For work I use a 14-inch MacBook Pro with the M3 chip."),
    Memory("en11", "I've been vegetarian since 2019, though I still eat eggs."),
    Memory("en12", "My mom has type 2 diabetes and checks her sugar twice a day."),
    Memory("en13", "Standup is at 9:45 every weekday on Zoom."),
    Memory("en14", "We're planning a road trip down the Pacific Coast Highway in August."),
    Memory("en15", "Our dog Biscuit is a three-year-old beagle."),
    Memory("en16", "My passport runs out in February, I have to renew it before Mexico."),
    Memory("en17", "Please email me rather than texting, I check my inbox far more often."),
    Memory("en18", "I'm training for the Berlin marathon in September."),
    Memory("en19", "Vault rotates the staging database credentials every 30 days."),
    Memory("en20", "Don't book meetings for me on Friday afternoons, that's my deep work time."),
    Memory("en21", "I wear hearing aids in both ears, so video calls need captions."),
    Memory("en22", "My daughter is allergic to bee stings and carries an EpiPen."),
    Memory("en23", "I take the train in from Oakville, it's about forty minutes each way."),
    Memory("en24", "The Amex card is only for business travel, the company reimburses it."),
    Memory("en25", "My brother-in-law Mark is a dentist in Leeds."),
    Memory("en26", "My last blood test showed low vitamin D, the doctor put me on supplements."),
    Memory("en27", "We're saving for a down payment on a house, the goal is $80k by 2026."),
    Memory("en28", "Our wedding anniversary is October 12."),
    Memory("en29", "The nightly backup job failed twice this week, the S3 bucket hit its quota."),
    Memory("en30", "I'm hooked on history podcasts, Hardcore History especially."),
    Memory("en31", "I keep a spare house key with my neighbour Carla."),
    Memory("en32", "The mobile team ships a release every second Thursday."),
)

EN_QUESTIONS = (
    Question("en", "What wearable does the user have on his wrist?", "en01"),
    Question("en", "Are there dairy restrictions I should keep in mind for him?", "en02"),
    Question("en", "Which instrument does the boy practice?", "en03"),
    Question("en", "What sport does he do on weeknights?", "en04"),
    Question("en", "When does pager duty hand over to the next engineer?", "en05"),
    Question("en", "Why did payments break yesterday evening?", "en06"),
    Question("en", "Where should he sit when I book him a plane ticket?", "en07"),
    Question("en", "What city is he originally from?", "en08"),
    Question("en", "What's his handle on the code hosting site?", "en09"),
    Question("en", "Which laptop is he working on?", "en10"),
    Question("en", "Does he eat meat?", "en11"),
    Question("en", "Which chronic illness does his mother live with?", "en12"),
    Question("en", "What time is the daily team sync?", "en13"),
    Question("en", "What vacation is the family taking this summer?", "en14"),
    Question("en", "What breed is their pet?", "en15"),
    Question("en", "Which travel document is about to lapse?", "en16"),
    Question("en", "What's the best channel to reach him?", "en17"),
    Question("en", "What race is he preparing for?", "en18"),
    Question("en", "How often do the test environment's DB passwords change?", "en19"),
    Question("en", "Which part of the week does he keep free for focused work?", "en20"),
    Question("en", "Why does he need subtitles turned on in online meetings?", "en21"),
    Question("en", "What emergency medicine does the girl carry around?", "en22"),
    Question("en", "How long is his commute to the office?", "en23"),
    Question("en", "What is the corporate credit card meant for?", "en24"),
    Question("en", "What's the profession of his wife's brother?", "en25"),
    Question("en", "What did the lab results reveal?", "en26"),
    Question("en", "What is the family putting money aside for?", "en27"),
    Question("en", "When did he and his wife get married?", "en28"),
    Question("en", "What broke the overnight snapshots?", "en29"),
    Question("en", "What kind of audio shows does he enjoy?", "en30"),
    Question("en", "If he gets locked out, who can let him in?", "en31"),
    Question("en", "How often does the app get a new version?", "en32"),
)

CROSS_MEMORIES = (
    # Chinese memories, asked in English.
    Memory("x01", "我的车是一辆白色的特斯拉 Model 3。"),
    Memory("x02", "我对青霉素过敏，医生开药前要提醒一下。"),
    Memory("x03", "我太太在小学教语文。"),
    Memory("x04", "我每年冬天都去北海道滑雪。"),
    Memory("x05", "我们的生产服务器都部署在阿里云上海区域。"),
    Memory("x06", "周末我喜欢去千岛湖钓鱼。"),
    Memory("x07", "我的工号是 A7731，报销的时候要填。"),
    Memory("x08", "我最近失眠很严重，经常凌晨两点还睡不着。"),
    Memory("x09", "我爷爷今年九十岁了，住在养老院里。"),
    Memory("x10", "我特别能吃辣，越辣越过瘾。"),
    # English memories, asked in Chinese.
    Memory("x11", "I work remotely for a company based in Amsterdam."),
    Memory("x12", "My blood type is O negative."),
    Memory("x13", "I'm terrified of heights, so no glass-floor observation decks for me."),
    Memory("x14", "We adopted a rescue cat named Pepper in March."),
    Memory("x15", "The Wi-Fi router at home is a TP-Link Archer AX55."),
    Memory("x16", "I've been taking piano lessons for two years."),
    Memory("x17", "My dentist appointment is next Tuesday at 4pm."),
    Memory("x18", "A customer says the app crashes whenever they upload a photo over 20 MB."),
    Memory("x19", "My favourite football team is Arsenal, I never miss a match."),
    Memory("x20", "I moved my savings into a high-yield account at Ally Bank."),
)

CROSS_QUESTIONS = (
    Question("cross", "What car does the user drive?", "x01"),
    Question("cross", "Is he allergic to any antibiotics?", "x02"),
    Question("cross", "What does his wife do for a living?", "x03"),
    Question("cross", "Where does he go for his winter sports holiday?", "x04"),
    Question("cross", "Which cloud provider hosts our production machines?", "x05"),
    Question("cross", "Which lake does he like to visit at weekends?", "x06"),
    Question("cross", "What's his employee number?", "x07"),
    Question("cross", "Has he been having trouble sleeping lately?", "x08"),
    Question("cross", "How old is his grandfather?", "x09"),
    Question("cross", "How does he feel about hot, spicy food?", "x10"),
    Question("cross", "他在哪个国家的公司上班？", "x11"),
    Question("cross", "他是什么血型？", "x12"),
    Question("cross", "他有什么害怕的东西？", "x13"),
    Question("cross", "他们家最近收养了什么动物？", "x14"),
    Question("cross", "他家里的无线路由器是什么型号？", "x15"),
    Question("cross", "他在学什么乐器？", "x16"),
    Question("cross", "他什么时候去看牙医？", "x17"),
    Question("cross", "客户反馈的闪退问题是什么情况？", "x18"),
    Question("cross", "他支持哪支球队？", "x19"),
    Question("cross", "他的存款放在哪家银行？", "x20"),
)

MULTI_MEMORIES = (
    Memory("m01", "I moved to Lisbon last year and now work as a nurse at the city hospital."),
    Memory("m02", "我去年从北京搬到了上海，现在在一家外企做财务。"),
    Memory("m03", "My wife is vegan, my nephew only eats pasta, and I'll eat anything."),
    Memory("m04", "我买了一副索尼的降噪耳机，还给女儿配了一台 iPad 上网课。"),
    Memory(
        "m05",
        "The outage started at 3am, it was caused by a bad DNS change, and we fixed it by"
        " reverting the change.",
    ),
    Memory("m06", "我研究生是在德国读的，专业是机械工程，毕业以后就回国了。"),
    Memory("m07", "My nephew Sam just turned four and my niece Mia is seven."),
    Memory("m08", "我每周三晚上打羽毛球，周六上午去爬山。"),
    Memory(
        "m09",
        "My best friend Jake used to live in Seattle, then spent two years in Denver, and"
        " now he's in Austin.",
    ),
    Memory("m10", "我女朋友是幼儿园老师，她弟弟在读高三，明年要高考。"),
    Memory(
        "m11",
        "My laptop battery barely lasts an hour, the E key sticks, and IT says the"
        " replacement comes in May.",
    ),
    Memory("m12", "我喜欢喝绿茶，但下午三点以后就不喝了，怕晚上睡不着。"),
    Memory(
        "m13", "Our team uses Jira for tickets, Slack for chat and Confluence for documentation."
    ),
    Memory("m14", "我下个月去新加坡出差三天，顺便约大学室友吃顿饭。"),
    Memory("m15", "I broke my left wrist snowboarding in 2021, and it still aches when it rains."),
    Memory("m16", "我的邮箱是 lin.wei@example.com，手机号就不方便给了。"),
    Memory(
        "m17", "I'm allergic to horses, which is awkward since my girlfriend rides every weekend."
    ),
    Memory("m18", "这个月的云服务器账单比上个月多了三千块，主要是带宽费涨了。"),
    Memory("m19", "I speak Cantonese with my parents, English at work, and I'm learning Japanese."),
    Memory("m20", "我的信用卡丢了，已经挂失了，新卡要七个工作日才能寄到。"),
)

MULTI_QUESTIONS = (
    Question("multi", "他搬到葡萄牙之后做什么工作？", "m01"),
    Question("multi", "他来上海之前住在哪里？", "m02"),
    Question("multi", "他侄子挑食吗，爱吃什么？", "m03"),
    Question("multi", "What tablet does his daughter use for school?", "m04"),
    Question("multi", "How did the team get the service back up?", "m05"),
    Question("multi", "What did he major in for his master's degree?", "m06"),
    Question("multi", "他的侄子多大了？", "m07"),
    Question("multi", "What does he do on Saturday mornings?", "m08"),
    Question("multi", "Where does his best friend live at present?", "m09"),
    Question("multi", "Which exam is his girlfriend's younger brother getting ready for?", "m10"),
    Question("multi", "他的键盘出了什么毛病？", "m11"),
    Question("multi", "Why does he skip tea late in the day?", "m12"),
    Question("multi", "Where does the team keep its written guides?", "m13"),
    Question("multi", "他这次出差除了工作还要见谁？", "m14"),
    Question("multi", "他的手腕为什么下雨天会疼？", "m15"),
    Question("multi", "What email address can the assistant use to reach him?", "m16"),
    Question("multi", "What does his partner do on weekends?", "m17"),
    Question("multi", "云费用上涨的主要原因是什么？", "m18"),
    Question("multi", "他和爸妈说话用什么语言？", "m19"),
    Question("multi", "When will the replacement card show up?", "m20"),
)

# Near the questions' topics, asked about by no question: another phone, city, relative, incident.
DISTRACTORS = (
    Memory("d01", "用户的太太用的是 iPhone 15 Pro。"),
    Memory("d02", "我大学是在重庆读的。"),
    Memory("d03", "我母亲去年做了膝盖手术，现在恢复得不错。"),
    Memory("d04", "前年我去过一次韩国首尔。"),
    Memory("d05", "My sister lives in Vancouver with her husband."),
    Memory("d06", "My colleague Priya uses a Dell XPS running Windows 11."),
    Memory("d07", "我同事养了一只金毛犬。"),
    Memory(
        "d08", "The production Kafka cluster raised a disk alert last month, but nothing went down."
    ),
    Memory("d09", "我同事小王每天下午都要喝一杯奶茶。"),
    Memory("d10", "My wife takes the bus to work, it's about 25 minutes."),
    Memory("d11", "我弟弟在广州开了一家奶茶店。"),
    Memory("d12", "My wife's passport is valid until 2031."),
    Memory("d13", "我去年在北京跑过一个半程马拉松。"),
    Memory("d14", "The production Redis cluster was upgraded to version 7 last week."),
    Memory("d15", "我表妹对芒果过敏。"),
    Memory("d16", "I tried a Samsung Galaxy Watch but returned it after a week."),
    Memory("d17", "我们公司在深圳和成都都有办公室。"),
    Memory("d18", "My neighbour plays the cello every evening."),
    Memory("d19", "The Toronto office closes early on Fridays in the summer."),
    Memory("d20", "我朋友在阿里云工作，负责数据库产品。"),
)

# On other subjects: the background a real memory store also holds.
UNRELATED = (
    Memory("u01", "我喜欢在阳台上种番茄和薄荷。"),
    Memory("u02", "The printer on the third floor needs a new toner cartridge."),
    Memory("u03", "我上个月把旧沙发卖给了邻居。"),
    Memory("u04", "I keep my receipts in a shoebox for tax season."),
    Memory("u05", "我最喜欢的电影是《大话西游》。"),
    Memory("u06", "I'm thinking about learning to bake sourdough bread."),
    Memory("u07", "我们小区下周二停水一天。"),
    Memory("u08", "My car insurance renews in November."),
    Memory("u09", "我的书桌是宜家买的，可以升降。"),
    Memory("u10", "I usually put on jazz while I'm cooking."),
    Memory("u11", "我周五晚上经常和朋友打麻将。"),
    Memory("u12", "The team offsite will be held at a lake resort."),
    Memory("u13", "我不太喜欢挤地铁，人实在太多了。"),
    Memory("u14", "I collect vintage postcards from the 1950s."),
    Memory("u15", "我家的热水器是海尔的，已经用了五年。"),
    Memory("u16", "My favourite pizza topping is pineapple, fight me."),
    Memory("u17", "我下周要参加表哥的婚礼。"),
    Memory("u18", "Conference badges are picked up in Hall B."),
    Memory("u19", "我们楼下新开了一家兰州拉面。"),
    Memory("u20", "I've read every Agatha Christie novel at least once."),
    Memory("u21", "我习惯用黑色的钢笔记笔记。"),
    Memory("u22", "The neighbour's dog barks every morning at seven."),
    Memory("u23", "我在考虑换一台更大的冰箱。"),
    Memory("u24", "I volunteer at the food bank twice a month."),
    Memory("u25", "我高中的时候是校篮球队的。"),
    Memory("u26", "Our kitchen faucet has a slow leak."),
    Memory("u27", "我喜欢秋天，受不了夏天的潮湿。"),
    Memory("u28", "I learned to juggle during lockdown."),
    Memory("u29", "我把家里的灯泡都换成了智能灯。"),
    Memory("u30", "The quarterly report template lives on the shared drive."),
    Memory("u31", "我很少看电视，偶尔看看纪录片。"),
    Memory("u32", "I once bumped into a famous chef at an airport."),
    Memory("u33", "我家门口的快递柜经常是满的。"),
    Memory("u34", "My handwriting is terrible, even I can't read it."),
    Memory("u35", "我小时候学过三年书法。"),
    Memory("u36", "I prefer paper books to e-readers."),
    Memory("u37", "我们家的窗帘是全遮光的。"),
    Memory("u38", "The coffee machine at work was finally replaced."),
    Memory("u39", "我喜欢收集各地的冰箱贴。"),
    Memory("u40", "I always forget where I parked at the mall."),
    Memory("u41", "我最近迷上了拼乐高。"),
    Memory("u42", "We painted the living room a light grey."),
    Memory("u43", "我对星座不太感兴趣。"),
    Memory("u44", "I usually do the grocery run on Sunday mornings."),
    Memory("u45", "我的自行车是二手的捷安特。"),
    Memory("u46", "The elevator in our building is out of service for repairs."),
    Memory("u47", "我没事的时候在手机上玩数独。"),
    Memory("u48", "I'm not a fan of horror movies."),
    Memory("u49", "我们部门下个月要搬到五楼。"),
    Memory("u50", "I sometimes write short poems in a notebook."),
)

MEMORIES: tuple[Memory, ...] = (
    ZH_MEMORIES + EN_MEMORIES + CROSS_MEMORIES + MULTI_MEMORIES + DISTRACTORS + UNRELATED
)
QUESTIONS: tuple[Question, ...] = ZH_QUESTIONS + EN_QUESTIONS + CROSS_QUESTIONS + MULTI_QUESTIONS
